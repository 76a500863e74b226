"""`nader-search run|status|best|export`: flags, TOML, exit codes, the lock, the outputs."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.runtime.lock import RunLock

from search_helpers import EXAMPLE, REPO

FAST = ["--dataset", "digits", "--depths", "1,1,1", "--epochs", "1", "--threads", "1"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("cli") / "run"
    r = invoke("run", "--from", EXAMPLE, *FAST, "--trials", "3", "--strategy", "walk", "--run-dir", run,
               "--format", "json")
    assert r.exit_code == 0, r.output
    return run, json.loads(r.stdout)


def test_run_json_summary(finished_run):
    run, out = finished_run
    assert out["stop_reason"] == "trials" and out["trials"] == 3 and out["resumed"] is False
    assert out["counts"].get("ok", 0) == 3
    best = out["best"]
    assert best["valid_acc"] == max(r["valid_acc"] for r in json.loads(invoke("export", run, "--format", "json")
                                                                        .stdout) if r["status"] == "ok")
    assert "##" in best["text"]


def test_status_table_lists_the_tree(finished_run):
    run, _ = finished_run
    r = invoke("status", run)
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("walk on digits from ") and "last: trials" in lines[0]
    assert lines[2].split()[:3] == ["arch", "status", "change"]
    assert lines[4].split()[:3] == ["#0", "ok", "root"]
    children = [ln for ln in lines[5:] if ln.startswith("  #")]
    assert children, r.stdout
    as_json = json.loads(invoke("status", run, "--format", "json").stdout)
    assert [a["arch_id"] for a in as_json["archs"]] == sorted(a["arch_id"] for a in as_json["archs"])
    assert "root_text" not in as_json["config"] and as_json["sessions"][0]["stop_reason"] == "trials"


def test_best_is_ready_for_nadc(finished_run, tmp_path):
    run, out = finished_run
    target = tmp_path / "best.nad"
    r = invoke("best", run, "-o", target)
    assert r.exit_code == 0
    text = target.read_text()
    assert text.startswith(f"# nader-search best: arch #{out['best']['arch_id']} ")
    done = subprocess.run([sys.executable, "-m", "nader.compiler.cli", "verify", str(target)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(invoke("best", run, "--format", "json").stdout)["arch_id"] == out["best"]["arch_id"]


def test_export_csv_and_json_hold_every_record(finished_run):
    run, _ = finished_run
    recs = json.loads(invoke("export", run, "--format", "json").stdout)
    rows = list(csv.DictReader(io.StringIO(invoke("export", run).stdout)))
    assert [int(r["arch_id"]) for r in rows] == [r["arch_id"] for r in recs]
    ok = [r for r in recs if r["status"] == "ok"]
    assert all(len(r["seeds"]) == 1 and r["seeds"][0]["seed"] == 777 for r in ok)
    assert json.loads(rows[0]["seeds"])[0]["job_id"] == recs[0]["seeds"][0]["job_id"]
    assert all(r["test_acc"] is not None and r["text"] for r in ok)


def test_rerun_of_the_same_command_resumes_and_does_nothing_new(finished_run):
    run, out = finished_run
    r = invoke("run", "--from", EXAMPLE, *FAST, "--trials", "3", "--strategy", "walk", "--run-dir", run,
               "--format", "json")
    assert r.exit_code == 0
    again = json.loads(r.stdout)
    assert again["resumed"] and again["trials"] == 3 and again["best"] == out["best"]


def test_changed_settings_exit_2_with_a_clear_message(finished_run):
    run, _ = finished_run
    r = invoke("run", "--from", EXAMPLE, *FAST, "--trials", "3", "--strategy", "rea", "--run-dir", run)
    assert r.exit_code == 2
    assert "holds a search with other settings (strategy: \"walk\" -> \"rea\"" in r.stderr
    assert "--force" in r.stderr and "Traceback" not in r.output


def test_second_process_on_a_run_dir_refuses_and_touches_nothing(finished_run):
    run, _ = finished_run
    with RunLock(run):
        before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in run.iterdir()}
        done = subprocess.run([sys.executable, "-m", "nader.cli", "run", "--from", str(EXAMPLE), *FAST,
                               "--trials", "5", "--strategy", "walk", "--run-dir", str(run)],
                              capture_output=True, text=True, cwd=REPO)
        after = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in run.iterdir()}
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: {run} is in use by another nader-search process (pid {os.getpid()}); "
                                   f"wait for it to finish or stop it, or use another --run-dir")
    assert after == before


def test_toml_file_with_flags_overriding(tmp_path):
    (tmp_path / "arch.nad").write_text(EXAMPLE.read_text())
    toml = tmp_path / "search.toml"
    toml.write_text('from = "arch.nad"\nstrategy = "rea"\ntrials = 1\ndepths = [1, 1, 1]\nepochs = 1\n'
                    'run-dir = "out"\nseed = 5\nthreads = 1\n[strategy-options]\npopulation = 3\n'
                    '[train]\ntrain_limit = 256\neval_limit = 128\n')
    r = invoke("run", toml, "--seed", "7", "--option", "sample-size=2", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["run_dir"] == str(tmp_path / "out")
    cfg = json.loads(invoke("status", tmp_path / "out", "--format", "json").stdout)["config"]
    assert cfg["seed"] == 7 and cfg["strategy"] == "rea" and cfg["trials"] == 1
    assert cfg["strategy_options"] == {"population": 3, "sample_size": 2}
    assert cfg["root"] == str(tmp_path / "arch.nad") and cfg["train_options"] == {"train_limit": 256,
                                                                                  "eval_limit": 128}


@pytest.mark.parametrize("args, message", [
    ([], "no root architecture: give --from"),
    (["--from", "missing.nad"], "cannot read the root architecture missing.nad"),
    (["--from", EXAMPLE, "--strategy", "annealing"], "unknown strategy 'annealing'; choose one of: fairnad, genius, local, nader, optuna, predictor, random, rea, tree, walk"),
    (["--from", EXAMPLE, "--strategy", "random"], "the language space has no uniform distribution; use --strategy walk"),
    (["--from", EXAMPLE, "--time-limit", "sim:100"], "--time-limit sim:N counts simulated training time"),
    (["--from", EXAMPLE, "--option", "population=x"], "option population: expected int, got 'x'"),
    (["--from", EXAMPLE, "--strategy", "walk", "--option", "population=3"],
     "strategy walk has no option population"),
    (["--from", EXAMPLE, "--dataset", "cifar10", "--data-dir", "/nonexistent"], "cifar10"),
])
def test_usage_errors_exit_2_without_a_traceback(tmp_path, args, message):
    r = invoke("run", *args, "--run-dir", tmp_path / "run")
    assert r.exit_code == 2, r.output
    assert message in r.stderr and r.stderr.startswith("error: ") and "Traceback" not in r.output


def test_a_flag_and_a_toml_key_refuse_a_value_with_the_same_reason(tmp_path):
    """--preset, preset = in a search.toml and create_study(preset=...) are one setting, read by one
    reader (search/settings.py): a bad value is refused before anything runs, for the same reason."""
    r = invoke("run", "--from", EXAMPLE, "--preset", "slow", "--run-dir", tmp_path / "run")
    assert r.exit_code == 2 and "Invalid value for '--preset': unknown preset 'slow'" in r.stderr
    toml = tmp_path / "s.toml"
    toml.write_text('preset = "slow"\n')
    r = invoke("run", toml, "--from", EXAMPLE, "--run-dir", tmp_path / "run")
    assert r.exit_code == 2 and "preset: unknown preset 'slow'" in r.stderr and str(toml) in r.stderr
    assert not (tmp_path / "run").exists()


def test_bad_toml_key_is_named(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text('from = "a.nad"\ntrails = 3\n')
    r = invoke("run", toml)
    assert r.exit_code == 2 and "unknown setting 'trails'" in r.stderr


def test_reading_commands_on_a_missing_run_exit_2(tmp_path):
    for cmd in ("status", "best", "export"):
        r = invoke(cmd, tmp_path / "nothing")
        assert r.exit_code == 2 and "is not a search run directory" in r.stderr


def test_help_lists_strategies_and_their_options():
    r = invoke("run", "--help")
    assert "rea: regularized evolution" in r.stdout and "population=20" in r.stdout and "sample_size=5" in r.stdout
    for cmd in ("run", "status", "best", "export"):
        assert cmd in invoke("--help").stdout


def test_ctrl_c_stops_cleanly_with_130_and_the_run_resumes(tmp_path):
    import signal
    import sqlite3
    import time

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "nader.cli", "run", "--from", str(EXAMPLE), *FAST, "--trials", "2",
           "--strategy", "walk", "--run-dir", str(run)]
    cmd[cmd.index("--epochs") + 1] = "3"
    # A suite started in the background inherits SIGINT ignored, and so would the child: Ctrl-C as
    # a terminal sends it needs the default disposition.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            conn = sqlite3.connect(run / "runs.sqlite")
            done = conn.execute("SELECT COUNT(*) FROM epochs").fetchone()[0]
            conn.close()
        except sqlite3.Error:
            done = 0
        if done:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted; run the same command again to resume" in err and "Traceback" not in err
    conn = sqlite3.connect(run / "runs.sqlite")
    assert conn.execute("SELECT stop_reason FROM search_sessions").fetchall() == [("interrupted",)]
    assert ("training",) in conn.execute("SELECT status FROM archs").fetchall()  # stopped mid-trial
    conn.close()
    resumed = subprocess.run(cmd + ["--format", "json"], capture_output=True, text=True, cwd=REPO)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["resumed"] and summary["trials"] == 2 and summary["counts"].get("ok") == 2
