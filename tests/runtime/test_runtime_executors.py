"""Process pool and Ray executors: same numbers as in-process, failures become records."""
from __future__ import annotations

import json

import pytest

from nader.runtime.executors import InProcessExecutor, PoolExecutor, RayExecutor, make_executor
from nader.runtime.errors import ConfigError
from nader.runtime.jobs import Job, result_metrics
from nader.runtime.runner import evaluate
from nader.runtime.store import RunStore

TINY = "runtime_helpers:tiny_builder"
# 256 training images in batches of 64: 4 steps per epoch
OPTIONS = {"epochs": 2, "threads": 1, "train_limit": 256, "eval_limit": 128}


def job(seed=777, **arch) -> Job:
    return Job(arch=json.dumps({"width": 4, **arch}), builder=TINY, dataset="digits", preset="quick", seed=seed,
               options=dict(OPTIONS))


@pytest.fixture(scope="module")
def reference():
    """In-process results for the two healthy jobs used below."""
    return {r.seed: r for r in InProcessExecutor().map([job(777), job(888)])}


def test_pool_matches_in_process_and_survives_a_dying_worker(reference):
    jobs = [job(777), job(555, exit_after=3), job(888)]
    events = []
    results = PoolExecutor(workers=2).map(jobs, on_event=events.append)
    a, dead, b = results
    assert result_metrics(a) == result_metrics(reference[777])
    assert result_metrics(b) == result_metrics(reference[888])
    assert (dead.status, dead.error_kind) == ("failed", "killed")
    assert "worker process died" in dead.error and "exited with status 3" in dead.error
    assert {e["job_id"] for e in events if e["type"] == "epoch"} == {a.job_id, b.job_id}


def test_pool_sigkilled_job_resumes_from_its_checkpoint(tmp_path):
    marker = tmp_path / "killed-once"
    j = job(321, die_after=6, marker=str(marker))  # dies in epoch 2, after epoch 1's checkpoint
    run = tmp_path / "run"
    first = evaluate([j], PoolExecutor(workers=1), run_dir=run)[0]
    assert marker.exists()
    assert (first.status, first.error_kind) == ("failed", "killed")
    assert "SIGKILL" in first.error
    with RunStore(run) as st:
        assert [e["epoch"] for e in st.epochs(j.job_id)] == [1]
    events = []
    second = evaluate([j], PoolExecutor(workers=1), run_dir=run, on_event=events.append)[0]
    assert second.status == "ok" and second.resumed_from == 1 and second.epochs == 2
    assert [e["epoch"] for e in events if e["type"] == "epoch"] == [2]
    straight = InProcessExecutor().map([j])[0]  # marker exists: runs through
    assert result_metrics(second) == result_metrics(straight)


def test_pool_timeout_kills_the_job():
    endless = Job(arch=json.dumps({"width": 4}), builder=TINY, seed=1, options={**OPTIONS, "epochs": 100000})
    (r,) = PoolExecutor(workers=1, timeout=2.0).map([endless])
    assert (r.status, r.error_kind) == ("failed", "timeout")


def test_ray_matches_in_process(reference, tmp_path):
    pytest.importorskip("ray")
    ex = RayExecutor(num_cpus=2)
    try:
        jobs = [job(777), job(888), job(444, exit_after=2)]
        results = evaluate(jobs, ex, run_dir=tmp_path)
    finally:
        ex.close()
    import ray

    assert not ray.is_initialized()  # the local instance it started is shut down
    a, b, dead = results
    assert result_metrics(a) == result_metrics(reference[777])
    assert result_metrics(b) == result_metrics(reference[888])
    assert dead.status == "failed" and dead.error_kind == "killed"
    with RunStore(tmp_path) as st:  # Ray workers on this machine committed their epochs
        assert [e["epoch"] for e in st.epochs(a.job_id)] == [1, 2]


def test_make_executor():
    assert isinstance(make_executor("inprocess"), InProcessExecutor)
    assert isinstance(make_executor("pool", workers=3), PoolExecutor)
    assert len(make_executor("pool", workers=3).devices) == 3
    assert isinstance(make_executor("ray", address="auto"), RayExecutor)
    with pytest.raises(ConfigError):
        make_executor("dask")
    with pytest.raises(ConfigError):
        PoolExecutor(workers=0)
