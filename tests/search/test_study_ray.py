"""`optimize(objective, n_jobs=K, executor="ray")` on a local Ray cluster of four CPUs and two
units of a custom resource (`slot`), started once for the module: the architectures and store of
the sequential run, a worker killed and its call retried, resources per task, pruning reports
through the mailbox, and a timeout that cancels the task."""
from __future__ import annotations

import os
import sys

import pytest

import study_objectives as obj
from nader.runtime.errors import ConfigError
from test_study_parallel import by_text, cells, schema


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    paths = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))  # the tests' modules, on the workers
    ray.init(num_cpus=4, resources={"slot": 2}, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR", runtime_env={"env_vars": {"PYTHONPATH": paths}})
    yield ray
    ray.shutdown()


def test_ray_gives_the_sequential_architectures_and_retries_a_killed_worker(tmp_path, local_ray):
    seq = cells(tmp_path / "seq")
    seq.optimize(obj.Sleep(), n_trials=8)
    study = cells(tmp_path / "ray")
    summary = study.optimize(obj.KillOnce(str(tmp_path), once=(3,)), n_trials=8, n_jobs=4, executor="ray")
    assert summary.trials == 8 and by_text(study) == by_text(seq)
    assert schema(tmp_path / "ray") == schema(tmp_path / "seq")
    assert [t.record["attempts"] for t in study.trials if t.number == 3] == [2]
    assert local_ray.is_initialized()  # a cluster it did not start is left running


def test_each_task_holds_the_resources_it_asks_for(tmp_path, local_ray):
    study = cells(tmp_path / "run")
    study.optimize(obj.Sleep(0.4), n_trials=6, n_jobs=4, executor="ray", resources={"slot": 1, "num_cpus": 0.5})
    spans = [t.user_attrs["ran"] for t in study.trials]
    most = max(sum(1 for a, b in spans if a <= start < b) for start, _ in spans)
    assert most <= 2  # two slots: never more than two trials at once, though four CPUs and n_jobs=4
    with pytest.raises(ConfigError, match="slot 3"):
        cells(tmp_path / "more").optimize(obj.Sleep(), n_trials=1, executor="ray", resources={"slot": 3})


def test_ray_tasks_report_to_the_pruner_and_time_out(tmp_path, local_ray):
    study = cells(tmp_path / "run", pruner="successive-halving", trial_timeout=3)
    study.optimize(obj.Epochs(epochs=9, hang=4), n_trials=8, n_jobs=3, executor="ray")
    states = {t.number: t.state for t in study.trials}
    assert "pruned" in states.values() and "ok" in states.values()
    assert states[4] == "failed" and study.trials[3].record["seeds"][0]["error_kind"] == "timeout"
