"""`nader-search eval`: output formats, exit statuses, no tracebacks, progress display."""
from __future__ import annotations

import io
import re
import json

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.compiler.network import BUILDER
from nader.runtime.jobs import Job, Result
from nader.runtime.progress import Progress

TINY = ["--builder", "runtime_helpers:tiny_builder"]
FAST = ["--epochs", "1", "--threads", "1"]


@pytest.fixture
def arch(tmp_path):
    p = tmp_path / "tiny.nad"
    p.write_text(json.dumps({"width": 4}))
    return p


def invoke(*args):
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in res.output
    return res


def test_json_records(arch):
    res = invoke("eval", arch, "--seeds", "777,888", "--format", "json", *FAST, *TINY)
    assert res.exit_code == 0, res.output
    recs = json.loads(res.stdout)
    assert [r["seed"] for r in recs] == [777, 888]
    for r in recs:
        assert r["status"] == "ok" and r["epochs"] == 1
        for k in ("test_acc", "valid_acc", "train_loss", "params", "flops", "seconds"):
            assert r[k] is not None
        assert "error" not in r
    lines = res.stderr.splitlines()  # off a terminal: one plain line per finished job
    assert [line.split(": ")[0] for line in lines] == ["[1/2] tiny.nad digits seed 777", "[2/2] tiny.nad digits seed 888"]
    off = invoke("eval", arch, "--seeds", "777", "--format", "json", "--progress", "off", *FAST, *TINY)
    assert off.exit_code == 0 and off.stderr == ""


def test_table_and_resume_through_run_dir(arch, tmp_path):
    run = tmp_path / "run"
    res = invoke("eval", arch, "--seeds", "777", "--run-dir", run, *FAST, *TINY)
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["seed", "status", "test_acc", "valid_acc", "train_loss", "params", "flops", "epochs",
                                "seconds"]
    assert lines[2].split()[:2] == ["777", "ok"]
    assert (run / "runs.sqlite").is_file()
    again = invoke("eval", arch, "--seeds", "777", "--run-dir", run, "--format", "json", *FAST, *TINY)
    first_acc = float(lines[2].split()[2])
    assert json.loads(again.stdout)[0]["test_acc"] == pytest.approx(first_acc, abs=0.01)


def test_failed_job_exits_1_with_error_field(tmp_path):
    bad = tmp_path / "bad.nad"
    bad.write_text(json.dumps({"build_error": "node 2: Conv2d needs out_channels"}))
    res = invoke("eval", bad, "--seeds", "777", "--format", "json", *FAST, *TINY)
    assert res.exit_code == 1
    (rec,) = json.loads(res.stdout)
    assert rec["status"] == "failed" and "out_channels" in rec["error"]
    res = invoke("eval", bad, "--seeds", "777", *FAST, *TINY)
    assert res.exit_code == 1 and "out_channels" in res.stdout


def test_missing_compiler_is_a_clean_failure(arch):
    res = invoke("eval", arch, "--seeds", "1", "--format", "json", "--builder", "nader.no_such:build_network", *FAST)
    assert res.exit_code == 1
    assert "nader.no_such:build_network is not available" in json.loads(res.stdout)[0]["error"]


@pytest.mark.parametrize("args,needle", [
    (["--dataset", "cifar10", "--data-dir", "/nonexistent/dir"], "Expected layout"),
    (["--dataset", "mnist"], "Invalid value"),
    (["--preset", "fast"], "unknown preset"),
    (["--seeds", "7,x"], "comma-separated"),
    (["--executor", "dask"], "Invalid value"),
    (["--workers", "0"], "Invalid value"),
])
def test_usage_errors_exit_2(arch, args, needle):
    res = invoke("eval", arch, *args, *TINY)
    assert res.exit_code == 2
    assert needle in res.output


def test_missing_arch_file_exits_2(tmp_path):
    res = invoke("eval", tmp_path / "missing.nad")
    assert res.exit_code == 2 and "does not exist" in res.output


def test_help_lists_eval():
    res = invoke("--help")
    assert res.exit_code == 0 and "eval" in res.output


def test_progress_off_a_terminal_is_one_plain_line_per_finished_job_and_off_is_silent():
    for mode, lines in ((None, 1), ("plain", 1), ("off", 0)):
        stream = io.StringIO()
        jobs = [Job(arch="x", builder=BUILDER, seed=s, name="a.nad") for s in (1, 2)]
        p = Progress(jobs, stream=stream, mode=mode)
        p.event({"type": "epoch", "job_id": jobs[0].job_id, "epoch": 1, "epochs": 2, "train_loss": 1.0,
                 "train_acc": 5.0})
        p.result(Result(job_id=jobs[0].job_id, seed=1, status="ok", test_acc=50.0))
        p.close()
        out = stream.getvalue().splitlines()
        assert len(out) == lines and "\x1b" not in stream.getvalue() and "epoch" not in stream.getvalue()
        if lines:
            assert re.fullmatch(r"\[1/2\] a\.nad digits seed 1: ok test 50\.00% \(\d+ s\)", out[0]), out


def test_progress_draws_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    jobs = [Job(arch="x", builder=BUILDER, seed=s, name="a.nad") for s in (1, 2)]
    p = Progress(jobs, stream=stream)
    p.event({"type": "start", "job_id": jobs[0].job_id, "epochs": 4, "resumed_from": 0})
    p.event({"type": "epoch", "job_id": jobs[0].job_id, "epoch": 2, "epochs": 4, "train_loss": 1.5, "train_acc": 40.0})
    assert "epoch 2/4" in stream.getvalue() and "#" * 10 + "-" * 10 in stream.getvalue()
    p.result(Result(job_id=jobs[0].job_id, seed=1, status="ok", test_acc=51.25))
    p.close()
    assert "[1/2]" in stream.getvalue() and "51.25" in stream.getvalue()
