"""`--strategy optuna` (Optuna's samplers over the nb201 cell space) and `--root none` (no root
trial: the baselines as published) on a generated derived table."""
from __future__ import annotations

import importlib.util
import random

import pytest
from click.testing import CliRunner

import derived_tables as D
from derived_tables import table_settings as _settings
from search_helpers import run_records as _records
from nader.cli import main
from nader.search.session import run_search
from nader.search.spaces import nb201 as S
from nader.search.spaces.space import NB201Space
from nader.search.strategies.base import SearchContext
from nader.search.strategies.optuna_sampler import OptunaStrategy
from nader.search.tree import Tree, TreeNode


@pytest.fixture(scope="module")
def smooth(tmp_path_factory):
    return D.write(tmp_path_factory.mktemp("smooth") / "smooth.csv")


def _trials(recs):
    return [r for r in recs if r["status"] in ("ok", "failed", "diverged")]


@pytest.mark.parametrize("sampler,trials", [("tpe", 30), ("nsga2", 30), ("cmaes", 30), ("gp", 13)])
def test_each_sampler_searches_new_cells_and_gets_the_tables_answers(tmp_path, smooth, sampler, trials):
    pytest.importorskip("optuna")
    for module in {"cmaes": "cmaes", "gp": "scipy"}.get(sampler, "optuna").split():
        pytest.importorskip(module)
    s = run_search(_settings(tmp_path / "run", smooth, strategy="optuna", strategy_options={"sampler": sampler},
                             trials=trials, seed=1))
    assert s.stop.code == "trials" and s.trials == trials
    recs = _records(tmp_path / "run")
    assert recs[0]["origin"] == "root" and recs[0]["status"] == "untrained"  # rootless by default
    done = _trials(recs)
    assert len(done) == trials and all(r["status"] == "ok" for r in done)
    cells = [S.cell_of_text(r["text"]) for r in done]
    assert len({str(c) for c in cells}) == trials  # every trial a new cell
    for r, cell in zip(done, cells):
        assert r["valid_acc"] == pytest.approx(D.smooth_accuracy(cell))
        assert r["operator"] in (f"optuna-{sampler}", "nb201-uniform") and r["parent_id"] == 0
    assert s.best["valid_acc"] == max(r["valid_acc"] for r in done)


def test_tpe_beats_uniform_draws_on_a_smooth_table(tmp_path, smooth):
    """The smooth table is additive over edges, what TPE's per-parameter model captures: over three
    seeds its best after 60 trials is above random search's every time."""
    pytest.importorskip("optuna")
    for seed in range(3):
        best = {}
        for strategy in ("optuna", "random"):
            s = run_search(_settings(tmp_path / f"{strategy}{seed}", smooth, strategy=strategy, trials=60, seed=seed))
            best[strategy] = s.best["valid_acc"]
        assert best["optuna"] > best["random"], (seed, best)


def test_a_resumed_optuna_search_keeps_its_trials_and_goes_on(tmp_path, smooth):
    pytest.importorskip("optuna")
    run = tmp_path / "run"
    run_search(_settings(run, smooth, strategy="optuna", trials=15, seed=2))
    before = _records(run)
    s = run_search(_settings(run, smooth, strategy="optuna", trials=25, seed=2))
    assert s.resumed and s.trials == 25
    after = _records(run)
    assert [(r["arch_id"], r["text"]) for r in after[:len(before)]] == [(r["arch_id"], r["text"]) for r in before]
    done = _trials(after)
    assert len(done) == 25 and len({r["change"]["cell"] for r in done}) == 25


def test_a_missing_optuna_is_refused_before_any_trial(tmp_path, smooth, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "optuna" else real(name, *a))
    r = CliRunner().invoke(main, ["run", "--space", "nb201", "--evaluator", f"table:{smooth}", "--dataset", "cifar10",
                                  "--preset", "nb201-12", "--seeds", "777", "--strategy", "optuna",
                                  "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip().splitlines()[-1] == (
        "error: --strategy optuna --option sampler=tpe needs optuna; install it: pip install "
        "'nader-toolchain[optuna]'")
    assert not (tmp_path / "run" / "runs.sqlite").exists()


def test_optuna_is_refused_outside_the_cell_space(tmp_path):
    r = CliRunner().invoke(main, ["run", "--strategy", "optuna", "--from", "examples/resnet_basic.nad", "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 2 and "add --space nb201" in r.output


# ---------------------------------------------------------------------- --root none


@pytest.mark.parametrize("strategy", ["random", "rea", "local"])
def test_baselines_in_the_cell_space_train_no_root_by_default(tmp_path, smooth, strategy):
    """The issue's done-when: with no root trial, random's 10-trial figure is no longer the
    root's (the ResNet cell, trial 1 of every search before)."""
    root = S.CellStructure.parse(S.RESNET)
    figures = []
    for seed in range(3):
        s = run_search(_settings(tmp_path / f"s{seed}", smooth, strategy=strategy, trials=10, seed=seed))
        recs = _records(tmp_path / f"s{seed}")
        assert recs[0]["status"] == "untrained" and not recs[0]["seeds"]
        done = _trials(recs)
        assert len(done) == 10 and root not in {S.cell_of_text(r["text"]) for r in done}
        figures.append(s.best["valid_acc"])
    assert all(f != D.smooth_accuracy(root) for f in figures) and len(set(figures)) > 1


def test_root_train_makes_the_root_trial_one_again(tmp_path, smooth):
    s = run_search(_settings(tmp_path / "run", smooth, strategy="random", trials=5, seed=0, root_mode="train"))
    recs = _records(tmp_path / "run")
    assert recs[0]["status"] == "ok" and recs[0]["valid_acc"] == pytest.approx(D.smooth_accuracy(S.RESNET))
    assert s.trials == 5 and len(_trials(recs)) == 5
    # the mode is part of the run's identity: resuming with the other one is refused
    with pytest.raises(Exception, match="root_trained"):
        run_search(_settings(tmp_path / "run", smooth, strategy="random", trials=6, seed=0, root_mode="none"))


def test_the_block_language_keeps_its_root_and_refuses_root_none(tmp_path):
    r = CliRunner().invoke(main, ["run", "--root", "none", "--from", "examples/resnet_basic.nad", "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 2 and "--root none needs a space with a uniform distribution" in r.output


@pytest.mark.parametrize("sampler", ["tpe", "nsga2"])
def test_a_resumed_search_proposes_what_the_uninterrupted_one_did(tmp_path, smooth, sampler):
    """Past TPE's 10 random start-up trials and NSGA-II's first generation: the study is a function
    of the tree (TPE's kept study and a rebuilt one agree)."""
    pytest.importorskip("optuna")
    options = {"sampler": sampler, **({"population": 6} if sampler == "nsga2" else {})}
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    run_search(_settings(whole, smooth, strategy="optuna", strategy_options=options, trials=24, seed=4))
    run_search(_settings(parts, smooth, strategy="optuna", strategy_options=options, trials=13, seed=4))
    run_search(_settings(parts, smooth, strategy="optuna", strategy_options=options, trials=24, seed=4))
    cells = [[r["change"]["cell"] for r in _records(run) if r["change"]] for run in (whole, parts)]
    assert len(cells[0]) >= 24 and cells[0] == cells[1]


def test_tpe_asks_once_per_proposal_and_draws_uniformly_past_a_known_cell():
    """A converged TPE proposes known cells; asking again and again grew the study by up to 100
    failed trials a proposal (seconds a trial by trial 250): one ask, then a uniform draw."""
    pytest.importorskip("optuna")
    left = S.RESNET  # every cell but this one is in the tree (proposed, so the study holds none of them)
    nodes = [TreeNode(0, None, 0, "untrained")]
    for i, cell in enumerate((str(c) for c in S.all_cells() if str(c) != left), 1):
        nodes.append(TreeNode(i, 0, 1, "proposed", change={"cell": cell}))
    tree = Tree(nodes)
    strategy = OptunaStrategy()
    strategy.bind(SearchContext(space=NB201Space()))
    cand = strategy.propose(strategy.ask(tree, random.Random(0)), random.Random(0))
    assert cand.change["cell"] == left
    study = strategy.cached[1]
    assert len(study.trials) <= 1
