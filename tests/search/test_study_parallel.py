"""`optimize(objective, n_jobs=K)` on threads and worker processes (Ray: test_study_ray.py), and
what the API refuses as the CLI does (issue 41): a second `tell`, an unenforceable
`trial_timeout`, a NaN budget, a second driver.

Every study here searches NAS-Bench-201's cells with `random` (its draws depend on the seed and
the architecture ids only), scored without training (`study_objectives.py`)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import nader.search as ns
import study_objectives as obj
from nader.cli import main
from nader.runtime.errors import ConfigError
from nader.runtime.lock import RunLock, RunLocked
from nader.search.strategies import STRATEGIES
from nader.search.strategies.random import RandomStrategy


def cells(run_dir, **settings):
    return ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"], storage=str(run_dir),
                           strategy="random", **settings)


def schema(run_dir) -> list:
    conn = sqlite3.connect(str(Path(run_dir) / "runs.sqlite"))
    try:
        return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=str)
    finally:
        conn.close()


def by_text(study) -> dict:
    return {t.text: t.value for t in study.trials}


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    """The sequential study the parallel ones are compared with: 8 trials in this thread."""
    run = tmp_path_factory.mktemp("seq") / "run"
    study = cells(run)
    study.optimize(obj.Sleep(), n_trials=8)
    return run, study


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_parallel_objectives_give_the_sequential_architectures_and_store(tmp_path, sequential, executor):
    seq_run, seq = sequential
    study = cells(tmp_path / "run")
    summary = study.optimize(obj.Sleep(0.05), n_trials=8, n_jobs=4, executor=executor)
    assert summary.stop.code == "trials" and summary.trials == 8
    assert by_text(study) == by_text(seq)  # random's draws: the same cells with the same values
    assert schema(tmp_path / "run") == schema(seq_run)
    pids = {t.user_attrs["pid"] for t in study.trials}
    assert (len(pids) > 1) == (executor == "process")  # processes ran them; threads ran in this process


def test_the_strategy_is_told_results_in_completion_order(tmp_path):
    told = []

    class Recording(RandomStrategy):
        name = "recording-random"

        def tell(self, node, rng):
            told.append(node.arch_id)
            super().tell(node, rng)

    ns.register_strategy(Recording)
    try:
        study = ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"],
                                storage=str(tmp_path / "run"), strategy="recording-random", root_mode="none")
        study.optimize(obj.Sleep(0.02, slow_odd=0.6), n_trials=6, n_jobs=3)  # odd ids finish last
    finally:
        STRATEGIES.pop("recording-random", None)
    finished = [t.number for t in sorted(study.trials, key=lambda t: t.record["finished"])]
    assert told == finished and told != sorted(told)


def test_a_killed_worker_loses_only_its_call_which_runs_again(tmp_path):
    study = cells(tmp_path / "run")
    study.optimize(obj.KillOnce(str(tmp_path), once=(2,), always=(4,)), n_trials=6, n_jobs=2, executor="process")
    trials = {t.number: t for t in study.trials}
    assert len(trials) == 6
    assert trials[2].state == "ok" and trials[2].record["attempts"] == 2  # died once, scored on its second run
    assert trials[4].state == "failed" and trials[4].record["seeds"][0]["error_kind"] == "killed"
    assert trials[4].record["attempts"] == 2
    assert all(t.state == "ok" for n, t in trials.items() if n != 4)


def test_trial_timeout_kills_a_python_objective(tmp_path):
    study = cells(tmp_path / "run", trial_timeout=1)
    study.optimize(obj.Hang(2), n_trials=3)  # with a timeout and no executor, a process that can be killed
    trials = {t.number: t for t in study.trials}
    assert trials[2].state == "failed" and trials[2].record["seeds"][0]["error_kind"] == "timeout"
    assert trials[1].state == trials[3].state == "ok"
    with pytest.raises(ConfigError, match="thread cannot be stopped"):
        cells(tmp_path / "other", trial_timeout=1).optimize(obj.Hang(2), n_trials=1, n_jobs=2, executor="thread")


def test_a_second_tell_of_one_trial_is_refused(tmp_path):
    study = cells(tmp_path / "run")
    trial = study.ask()
    study.tell(trial, 1.0)
    with pytest.raises(ValueError, match="told already"):
        study.tell(trial, 2.0)
    other = study.ask()
    study.close()
    assert [(t.number, t.value) for t in study.trials if t.state == "ok"] == [(trial.number, 1.0)]
    study = ns.load_study(tmp_path / "run")
    again = study.ask()  # asked and not told: asked again
    assert again.number == other.number
    study.tell(again, 3.0)
    with pytest.raises(ValueError, match="told already"):
        study.tell(other, 4.0)  # the same trial, from the session that was closed
    study.close()
    assert [t.value for t in study.trials] == [1.0, 3.0]  # no extra trial left "training"


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), "abc", -5])
def test_create_study_refuses_a_budget_the_cli_refuses(tmp_path, budget):
    with pytest.raises(ConfigError, match="max_params"):
        cells(tmp_path / "run", max_params=budget)


def test_a_second_driver_is_pointed_to_n_jobs(tmp_path):
    study = cells(tmp_path / "run")
    study.optimize(obj.Sleep(), n_trials=2)
    with RunLock(tmp_path / "run"):  # another process drives it (the lock is per open file)
        with pytest.raises(RunLocked, match="n_jobs"):
            ns.load_study(tmp_path / "run").optimize(obj.Sleep(), n_trials=1)
        with pytest.raises(RunLocked, match="executor='ray'"):
            ns.load_study(tmp_path / "run").ask()


def test_callbacks_progress_user_attrs_and_test_acc(tmp_path, capsys):
    seen = []

    def objective(arch):
        arch.set_user_attr("cell", arch.cell)
        return {"valid_acc": obj.score(arch.cell), "test_acc": 42.0 + arch.number}

    study = cells(tmp_path / "run")
    study.optimize(objective, n_trials=4, n_jobs=2, callbacks=[lambda s, t: seen.append((s, t))],
                   show_progress_bar=True)
    assert len(seen) == 4 and all(s is study for s, _ in seen)
    assert all(t.user_attrs["cell"] and t.values == [obj.score(t.user_attrs["cell"])] for _, t in seen)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("trial done=")]
    assert len(lines) == 4  # the CLI's plain progress line (stderr is not a terminal here)
    rows = study.trials_dataframe()
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert [r["test_acc"] for r in rows] == [42.0 + r["number"] for r in rows]
    assert all(r["user_attrs_cell"] for r in rows)
    exported = json.loads(CliRunner().invoke(main, ["export", str(tmp_path / "run"), "--format", "json"]).stdout)
    assert [r["user_attrs"]["cell"] for r in exported if r["status"] == "ok"] == [r["user_attrs_cell"] for r in rows]


def test_user_attrs_are_bounded_json(tmp_path):
    arch = ns.Arch(1, "", "nb201", "cifar10", [1], None, None, None, 0)
    arch.set_user_attr("ok", {"a": [1, 2.5, "x", None, True]})
    for key, value, reason in [("big", "x" * 5000, "too large"), ("nan", float("nan"), "JSON"),
                               ("obj", object(), "JSON"), ("", 1, "key"), ("k" * 65, 1, "key")]:
        with pytest.raises(ValueError, match=reason):
            arch.set_user_attr(key, value)
    for i in range(63):
        arch.set_user_attr(f"k{i}", i)
    with pytest.raises(ValueError, match="at most 64"):
        arch.set_user_attr("one-more", 1)
    assert arch.user_attrs["ok"] == {"a": [1, 2.5, "x", None, True]}

    def refused(a):  # refused inside an objective: that trial fails with the reason, the rest go on
        a.set_user_attr("big", "x" * 5000)
        return 1.0

    study = cells(tmp_path / "run")
    study.optimize(refused, n_trials=2)
    assert {t.state for t in study.trials} == {"failed"}
    assert "too large" in study.trials[0].record["seeds"][0]["error"]


def test_a_returned_dict_names_the_objectives(tmp_path):
    study = cells(tmp_path / "run")
    study.optimize(lambda arch: {"valid_acc": 1.0, "tset_acc": 2.0}, n_trials=1)
    assert study.trials[0].state == "failed"
    assert "'tset_acc'" in study.trials[0].record["seeds"][0]["error"]


def test_a_study_the_runtime_trains_takes_n_jobs_as_its_pool_and_refuses_threads(tmp_path):
    study = cells(tmp_path / "run", evaluator="training")
    with pytest.raises(ConfigError, match="processes"):
        study.optimize(n_trials=1, n_jobs=2, executor="thread")
    with pytest.raises(ConfigError, match="n_jobs"):
        study.optimize(obj.Sleep(), n_trials=1, n_jobs=0)


def test_an_objective_that_cannot_travel_to_a_process_is_refused_with_the_fix(tmp_path):
    import threading

    lock = threading.Lock()
    study = cells(tmp_path / "run")
    with pytest.raises(ConfigError, match="executor='thread'"):
        study.optimize(lambda arch: (lock, 1.0)[1], n_trials=2, n_jobs=2, executor="process")
    assert [t.state for t in study.trials] == ["training"]  # asked, never run: asked again on resume
    study.optimize(lambda arch: (lock, 1.0)[1], n_trials=1, n_jobs=2)  # threads share it
    assert [t.state for t in study.trials] == ["ok", "ok"]
