"""Run store and resume: interrupted evaluations continue where they stopped."""
from __future__ import annotations

import json
import sqlite3

import pytest
import torch

from nader.runtime.executors import InProcessExecutor
from nader.runtime.jobs import Job, checkpoint_path, result_metrics
from nader.runtime.runner import evaluate
from nader.runtime.store import RunStore

TINY = "runtime_helpers:tiny_builder"


class Stop(BaseException):
    """Stands for Ctrl-C / a killed driver: not an Exception, so nothing swallows it."""


def job(seed=777, epochs=3, arch=None) -> Job:
    return Job(arch=json.dumps(arch or {"width": 4}), builder=TINY, dataset="digits", preset="quick", seed=seed,
               options={"epochs": epochs, "threads": 1, "train_limit": 256, "eval_limit": 128}, name="t.nad")


def stop_after(job_id, epoch):
    def cb(ev):
        if ev["type"] == "epoch" and ev["job_id"] == job_id and ev["epoch"] == epoch:
            raise Stop()
    return cb


class Recorder:
    def __init__(self):
        self.events = []

    def __call__(self, ev):
        self.events.append(dict(ev))

    def of(self, job_id, kind):
        return [e for e in self.events if e["job_id"] == job_id and e["type"] == kind]


def test_interrupted_run_resumes_from_last_epoch_and_skips_finished(tmp_path):
    a, b = job(777), job(888)
    run = tmp_path / "run"
    with pytest.raises(Stop):
        evaluate([a, b], InProcessExecutor(callbacks=[stop_after(b.job_id, 1)]), run_dir=run)

    with RunStore(run) as st:
        assert st.finished(a.job_id) is not None  # committed before the interruption
        assert st.result(b.job_id) is None
        assert [e["epoch"] for e in st.epochs(b.job_id)] == [1]
        states = {j.job_id: state for j, state, _ in st.jobs()}
        assert states == {a.job_id: "ok", b.job_id: "running"}
    ck = torch.load(checkpoint_path(run, b.job_id), weights_only=True)
    assert ck["epoch"] == 1
    assert not list((run / "checkpoints").glob("*.tmp"))  # atomic writes leave no temporaries

    rec, cached, fresh = Recorder(), [], []
    results = evaluate([a, b], InProcessExecutor(callbacks=[rec]), run_dir=run, on_cached=cached.append,
                       on_result=fresh.append)
    assert [r.job_id for r in cached] == [a.job_id]  # finished job not rerun
    assert [r.job_id for r in fresh] == [b.job_id]
    assert rec.of(a.job_id, "start") == []
    assert [e["resumed_from"] for e in rec.of(b.job_id, "start")] == [1]
    assert [e["epoch"] for e in rec.of(b.job_id, "epoch")] == [2, 3]  # continues at k+1
    rb = results[1]
    assert rb.status == "ok" and rb.resumed_from == 1 and rb.epochs == 3
    assert [h["epoch"] for h in rb.history] == [1, 2, 3]

    # resuming gives exactly the numbers of an uninterrupted run
    straight = evaluate([b], InProcessExecutor(), run_dir=tmp_path / "other")[0]
    assert result_metrics(rb) == result_metrics(straight)

    with RunStore(run) as st:
        assert [e["epoch"] for e in st.epochs(b.job_id)] == [1, 2, 3]
        assert {r.job_id for r in st.results()} == {a.job_id, b.job_id}

    # a third run does nothing at all
    rec3 = Recorder()
    again = evaluate([a, b], InProcessExecutor(callbacks=[rec3]), run_dir=run)
    assert rec3.events == [] and [r.test_acc for r in again] == [r.test_acc for r in results]


def test_interruption_after_the_last_epoch_keeps_the_training(tmp_path):
    j = job(999, epochs=2)
    with pytest.raises(Stop):
        evaluate([j], InProcessExecutor(callbacks=[stop_after(j.job_id, 2)]), run_dir=tmp_path)
    rec = Recorder()
    r = evaluate([j], InProcessExecutor(callbacks=[rec]), run_dir=tmp_path)[0]
    assert rec.of(j.job_id, "epoch") == [] and r.resumed_from == 2 and r.status == "ok"
    assert result_metrics(r) == result_metrics(evaluate([j], InProcessExecutor())[0])


def test_failed_jobs_are_retried_diverged_are_final(tmp_path):
    bad, nan = job(arch={"build_error": "broken"}), job(arch={"width": 4, "nan_after": 1})
    first = evaluate([bad, nan], InProcessExecutor(), run_dir=tmp_path)
    assert [r.status for r in first] == ["failed", "diverged"]
    cached, fresh = [], []
    evaluate([bad, nan], InProcessExecutor(), run_dir=tmp_path, on_cached=cached.append, on_result=fresh.append)
    assert [r.job_id for r in fresh] == [bad.job_id]
    assert [r.job_id for r in cached] == [nan.job_id]


def test_database_layout(tmp_path):
    j = job(epochs=1)
    r = evaluate([j, j], InProcessExecutor(), run_dir=tmp_path)  # duplicates run once
    assert r[0] is r[1] or r[0].job_id == r[1].job_id
    con = sqlite3.connect(tmp_path / "runs.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"jobs", "results", "epochs"} <= tables
    row = con.execute("SELECT status, seed, epochs, test_acc FROM results").fetchone()
    assert row[:3] == ("ok", 777, 1) and row[3] == pytest.approx(r[0].test_acc)
    spec = json.loads(con.execute("SELECT spec FROM jobs").fetchone()[0])
    assert Job.from_dict(spec).job_id == j.job_id
    assert con.execute("SELECT COUNT(*) FROM epochs").fetchone()[0] == 1


def test_corrupt_checkpoint_restarts_training(tmp_path):
    j = job(epochs=1)
    p = checkpoint_path(tmp_path, j.job_id)
    p.parent.mkdir(parents=True)
    p.write_bytes(b"not a checkpoint")
    rec = Recorder()
    r = evaluate([j], InProcessExecutor(callbacks=[rec]), run_dir=tmp_path)[0]
    assert r.status == "ok" and rec.of(j.job_id, "start")[0]["resumed_from"] == 0
    assert torch.load(p, weights_only=True)["epoch"] == 1
