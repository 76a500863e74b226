"""A run directory written by an earlier release still opens: read by status, best, export, report
and the API, and resumed, through today's store (`tests/fixtures/run_made_by_main.sql` is the
database main wrote before the store became a package; see its header)."""
from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

from click.testing import CliRunner

import nader.search as ns
from nader.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run_made_by_main.sql"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _run(tmp_path) -> Path:
    run = tmp_path / "made-by-main"
    run.mkdir()
    conn = sqlite3.connect(run / "runs.sqlite")
    conn.executescript(FIXTURE.read_text(encoding="utf-8"))
    conn.close()
    return run


def test_a_run_made_by_main_reads_as_it_was_written(tmp_path):
    run = _run(tmp_path)
    for args in (["status", run], ["best", run], ["export", run, "--format", "json"],
                 ["report", run, "-o", tmp_path / "r.html"]):
        r = invoke(*args)
        assert r.exit_code == 0 and not r.stderr, (args, r.output)
    recs = json.loads(invoke("export", run, "--format", "json").stdout)
    assert [(r["arch_id"], r["status"], r["operator"]) for r in recs] == [(0, "ok", None), (1, "ok", "change-conv"),
                                                                         (2, "ok", "add-residual")]
    assert round(recs[2]["valid_acc"], 2) == 66.57 and recs[2]["seeds"][0]["job_id"] == "3a5c00d2a507af29"
    assert invoke("best", run).stdout.startswith("# nader-search best: arch #2 (parent #0, add-residual), valid 66.57%")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        study = ns.load_study(str(run))
    assert [t.number for t in study.best_trials] == [2]


def test_a_run_made_by_main_resumes(tmp_path):
    run = _run(tmp_path)
    r = invoke("run", "--run-dir", run, "--trials", "4")
    assert r.exit_code == 0, r.output
    conn = sqlite3.connect(run / "runs.sqlite")
    assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT session) FROM archs").fetchone() == (4, 2)
    assert conn.execute("SELECT status FROM archs WHERE arch_id=3").fetchone()[0] in ("ok", "diverged", "failed")
    conn.close()
