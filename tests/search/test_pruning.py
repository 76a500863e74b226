"""Pruning: the rules of `nader.search.pruners` (one ranking for the runtime's `--fidelity` rungs
and an objective's reports), and studies whose objectives report per epoch and are pruned."""
from __future__ import annotations

import math
import sqlite3

import pytest

import nader.search as ns
import study_objectives as obj
from nader.runtime.errors import ConfigError
from nader.search import records
from nader.search.pruners import Reports, kept, make_pruner
from nader.search.store import RunReader


def reported(rows, direction="max", complete=()):
    r = Reports(direction)
    for trial, steps in rows.items():
        for step, value in steps.items():
            r.add(trial, step, value)
    for trial in complete:
        r.finish(trial, True)
    return r


def test_kept_is_the_top_third_at_least_one_ties_to_the_earlier():
    members = [(1, 50.0), (2, 70.0), (3, 70.0), (4, float("nan")), (5, 10.0), (6, 60.0)]
    assert kept(members, 3) == [2, 3]
    assert kept(members, 3, direction="min") == [5, 1]
    assert kept(members[:2], 3) == [2]  # at least one goes on
    assert kept(members, 3, entrants=9) == [2, 3, 6]  # failed entrants count (the runtime's rungs)


def test_successive_halving_judges_each_rung_once_against_the_trials_that_reached_it():
    sh = ns.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    r = reported({(1, 0): {1: 50.0, 2: 51.0, 3: 52.0}, (2, 0): {1: 40.0}})
    assert not sh.prune(r, (1, 0), 1)  # the better of the two at rung 1
    assert sh.prune(r, (2, 0), 1)  # 2 at rung 1: top max(1, 2 // 3) = 1 of them, and it is not
    r.add((2, 0), 2, 99.0)
    assert not sh.prune(r, (2, 0), 2)  # between rungs: nothing is judged
    r.add((3, 0), 1, 60.0)
    assert not sh.prune(r, (3, 0), 1)  # the best at rung 1 so far
    r.add((3, 0), 3, 10.0)
    assert sh.prune(r, (3, 0), 3)  # rung 3: 1 reached it with 52


def test_hyperband_fills_brackets_in_proportion_and_judges_from_their_first_rung():
    hb = ns.HyperbandPruner(min_resource=1, max_resource=9, reduction_factor=3)
    assert hb.budgets == (1, 3, 9) and [hb.shape(b) for b in range(3)] == [(0, 9), (1, 5), (2, 3)]
    brackets = [hb.bracket_of((n, 0)) for n in range(17)]
    assert brackets == [0] * 9 + [1] * 5 + [2] * 3
    r = reported({(10, 0): {1: 90.0, 3: 50.0}, (11, 0): {1: 10.0}})  # bracket 1 starts at rung 1 (3 steps)
    assert not hb.prune(r, (11, 0), 1)  # below its bracket's first rung
    r.add((11, 0), 3, 40.0)
    assert hb.prune(r, (11, 0), 3)
    with pytest.raises(ConfigError, match="max_resource"):
        ns.HyperbandPruner(min_resource=1)


def test_the_median_rule_waits_for_startup_trials_and_warmup_steps():
    median = ns.MedianPruner(n_startup_trials=2, n_warmup_steps=1)
    r = reported({(1, 0): {1: 10.0, 2: 20.0}, (2, 0): {1: 30.0, 2: 40.0}, (3, 0): {1: 0.0, 2: 25.0}},
                 complete=[(1, 0)])
    assert not median.prune(r, (3, 0), 2)  # one finished trial: fewer than the startup's two
    r.finish((2, 0), True)
    assert not median.prune(r, (3, 0), 0)  # warm-up
    assert median.prune(r, (3, 0), 2) is True  # best so far 25 < median(20, 40) = 30
    r.add((3, 0), 3, 35.0)
    assert not median.prune(r, (3, 0), 3)  # no finished trial reported step 3
    r.add((4, 0), 2, math.nan)
    assert median.prune(r, (4, 0), 2)  # NaN is worst


def test_pruner_settings_are_read_and_refused_as_settings(tmp_path):
    assert make_pruner("successive-halving", eta=2, min_resource=3).spec()["reduction_factor"] == 2
    assert make_pruner({"name": "median", "n_startup_trials": 1}).n_startup_trials == 1
    for bad, reason in [("sha", "pruner"), ({"name": "median", "n_startup": 1}, "n_startup"),
                        ({"name": "median", "n_startup_trials": -1}, "at least 0")]:
        with pytest.raises(ConfigError, match=reason):
            obj_study(tmp_path, pruner=bad).optimize(obj.Epochs(), n_trials=1)
    with pytest.raises(ConfigError, match="choose one"):
        obj_study(tmp_path, pruner="median", fidelity="hyperband").optimize(obj.Epochs(), n_trials=1)
    with pytest.raises(ConfigError, match="--fidelity"):
        obj_study(tmp_path, pruner="median", evaluator="training").optimize(n_trials=1)


def obj_study(tmp_path, name="run", **settings):
    return ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"], storage=str(tmp_path / name),
                           strategy="random", load_if_exists=True, **settings)


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_a_study_prunes_by_its_reports_and_records_the_last_value(tmp_path, n_jobs):
    study = obj_study(tmp_path, pruner="successive-halving")
    study.optimize(obj.Epochs(epochs=9), n_trials=10, n_jobs=n_jobs)
    trials = study.trials
    pruned = [t for t in trials if t.state == "pruned"]
    assert pruned and any(t.state == "ok" for t in trials)
    conn = sqlite3.connect(str(tmp_path / "run" / "runs.sqlite"))
    reports = {}
    for arch_id, step, value in conn.execute("SELECT arch_id, step, value FROM arch_reports"):
        reports.setdefault(arch_id, {})[step] = value
    conn.close()
    for t in pruned:
        last = max(reports[t.number])
        assert t.user_attrs["stopped_at"] == last == t.record["seeds"][0]["epochs"]
        assert t.value == reports[t.number][last] == t.record["valid_acc"]  # its last value
    assert all(len(reports[t.number]) == 9 for t in trials if t.state == "ok")
    with RunReader(tmp_path / "run") as reader:
        best = records.best(reader)
    assert best["status"] == "ok"  # a pruned trial is a lower rung: below every finished one
    assert all(t.state != "pruned" for t in study.best_trials)


def test_a_resumed_study_prunes_with_the_reports_of_the_earlier_sessions(tmp_path):
    study = obj_study(tmp_path, pruner={"name": "median", "n_startup_trials": 3})
    study.optimize(obj.Epochs(epochs=3), n_trials=3)
    assert {t.state for t in study.trials} == {"ok"}
    study = ns.load_study(tmp_path / "run")

    def worst(arch):  # below every earlier trial at step 1: only the stored reports can say so
        arch.report(-100.0, 1)
        if arch.should_prune():
            raise ns.TrialPruned()
        return 0.0

    study.optimize(worst, n_trials=1)
    assert study.trials[-1].state == "pruned" and study.trials[-1].value == -100.0


def test_ask_and_tell_report_to_the_pruner_and_tell_pruned(tmp_path):
    study = obj_study(tmp_path, pruner="successive-halving")
    first = study.ask()
    first.arch.report(50.0, 1)
    assert not first.arch.should_prune()
    study.tell(first, 50.0)
    second = study.ask()
    second.arch.report(10.0, 1)  # worse than the first at rung 1
    assert second.arch.should_prune()
    study.tell(second, state="pruned")
    study.close()
    states = {t.number: (t.state, t.value) for t in study.trials}
    assert states == {first.number: ("ok", 50.0), second.number: ("pruned", 10.0)}
