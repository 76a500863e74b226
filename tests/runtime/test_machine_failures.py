"""A full disk (or an I/O error, a read-only file) is the machine's failure, not the architecture's:
the trial is `interrupted`, the command stops with exit 2 and one line saying what to fix, and
the same command afterwards trains it."""
from __future__ import annotations

import errno
import json
import os
import sqlite3

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.compiler.network import BUILDER
from nader.runtime.faults import infrastructure_reason
from nader.runtime.integrity import StoreError
from nader.runtime.jobs import Job, Result
from nader.runtime.store import RunStore

from search_helpers import EXAMPLE

SEARCH = ["--dataset", "digits", "--depths", "1,1,1", "--epochs", "1", "--threads", "1", "--seeds", "1"]
EVAL = ["--builder", "runtime_helpers:tiny_builder", "--epochs", "1", "--threads", "1", "--seeds", "1"]


def invoke(*args):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in r.output
    return r


@pytest.fixture
def full_disk(monkeypatch):
    """Every fsync fails as on a full disk (the checkpoint writer is the one caller in these commands)."""
    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)
    return monkeypatch


def test_search_trial_on_a_full_disk_is_interrupted_and_retried(tmp_path, full_disk):
    run = tmp_path / "run"
    args = ["run", "--from", EXAMPLE, *SEARCH, "--trials", "1", "--run-dir", run]
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"error: disk full writing {run.resolve() / 'checkpoints'}")
    assert line.endswith(".pt: free space and run the same command again to resume")
    status = json.loads(invoke("status", run, "--format", "json").stdout)
    assert [a["status"] for a in status["archs"]] == ["interrupted"]
    assert status["archs"][0]["seeds"] == [] and status["sessions"][-1]["stop_reason"] == "infrastructure"

    full_disk.undo()
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    status = json.loads(invoke("status", run, "--format", "json").stdout)
    (root,) = status["archs"]
    assert root["status"] == "ok" and root["valid_acc"] is not None
    assert [s["status"] for s in root["seeds"]] == ["ok"]


def test_eval_job_on_a_full_disk_is_interrupted_and_retried(tmp_path, full_disk):
    arch, run = tmp_path / "tiny.nad", tmp_path / "run"
    arch.write_text(json.dumps({"width": 4}))
    args = ["eval", arch, *EVAL, "--run-dir", run, "--format", "json"]
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: disk full writing ") and "free space and run the same command again" in line
    with RunStore(run) as store:
        (job, state, _epochs), = store.jobs()
        assert state == "interrupted" and store.finished(job.job_id) is None

    full_disk.undo()
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert [r["status"] for r in json.loads(again.stdout)] == ["ok"]


def test_a_full_database_is_a_one_line_store_error(tmp_path):
    """SQLite's own full-disk error (here: the page limit reached) names the file."""
    store = RunStore(tmp_path)
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count={pages}")
    job = Job(arch="x" * 20000, builder=BUILDER)
    with pytest.raises(StoreError) as caught:
        store.add_jobs([job])
        store.put_result(Result(job_id=job.job_id, seed=1, status="ok", history=[{"epoch": 1}] * 50))
    store.close()
    assert str(caught.value) == (f"disk full writing {tmp_path / 'runs.sqlite'}: free space and run the same "
                                 f"command again to resume")


@pytest.mark.parametrize("exc, machine", [
    (OSError(errno.ENOSPC, "No space left on device", "/r/ck.pt"), "disk full writing /r/ck.pt"),
    (OSError(errno.EIO, "Input/output error", "/r/x"), "I/O error on /r/x"),
    (OSError(errno.EROFS, "Read-only file system", "/r/x"), "read-only file system writing /r/x"),
    (PermissionError(errno.EACCES, "Permission denied", "/r/x"), "permission denied on /r/x"),
    (sqlite3.OperationalError("database or disk is full"), None),  # no sqlite_errorname: not told apart
    (MemoryError(), None),
    (RuntimeError("CUDA out of memory"), None),
    (ValueError("shapes do not match"), None),
])
def test_what_counts_as_the_machines_failure(exc, machine):
    reason = infrastructure_reason(exc)
    assert (reason is None) if machine is None else reason.startswith(machine)


def test_a_wrapped_disk_error_is_still_the_machines():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/r/ck.pt")
        except OSError as inner:
            raise RuntimeError("checkpoint failed") from inner
    except RuntimeError as outer:
        assert infrastructure_reason(outer).startswith("disk full writing /r/ck.pt")


def test_an_io_error_loading_data_interrupts_the_job_and_a_build_error_still_fails_it(monkeypatch):
    from nader.runtime import data
    from nader.runtime.jobs import run_job

    job = Job(arch=json.dumps({"width": 4}), builder="runtime_helpers:tiny_builder", options={"epochs": 1})

    def unreadable(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", "/data/digits.npz")

    with monkeypatch.context() as m:
        m.setattr(data, "load_dataset", unreadable)
        r = run_job(job)
    assert (r.status, r.error_kind) == ("interrupted", "infrastructure")
    assert r.error.startswith("I/O error on /data/digits.npz")
    broken = run_job(Job(arch=json.dumps({"build_error": "no such op"}), builder="runtime_helpers:tiny_builder",
                         options={"epochs": 1}))
    assert (broken.status, broken.error_kind) == ("failed", "build")
