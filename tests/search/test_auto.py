"""`--strategy auto`, the default: the recipe the benchmarks show best for the space, the budget and
the data, said in one line when the run starts and recorded as the strategy it chose."""
from __future__ import annotations

import importlib.util

import pytest

import derived_tables as D
from nader.search.config import merge
from nader.search.tree import FINAL
from search_helpers import EXAMPLE, run_records

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def smooth(tmp_path_factory):
    return D.write(tmp_path_factory.mktemp("smooth") / "smooth.csv")


def test_auto_is_the_predictor_after_a_whole_space_warm_start_in_the_cell_space():
    config = merge({"space": "nb201", "dataset": "cifar100"})
    assert (config.strategy, config.warm_start, config.proxy) == ("predictor", "all", "synflow")
    assert config.chosen.startswith("auto: predictor with a warm start of the whole space by synflow")
    assert not config.trains_root()  # the predictor starts from its own trials, as the baselines do


def test_auto_keeps_what_was_said_and_weighs_a_short_time_limit():
    config = merge({"space": "nb201", "warm_start": 0, "proxy": "params"})
    config.check()
    assert config.strategy == "predictor" and config.warm_start is None and "no warm start" in config.chosen
    short = merge({"space": "nb201", "time_limit": 600})
    assert short.warm_start == 1000 and "1,000 cells" in short.chosen
    assert merge({"space": "nb201", "strategy": "local"}).strategy == "local"  # only auto is replaced


def test_auto_is_rea_in_the_block_language_and_local_without_scikit_learn(monkeypatch):
    config = merge({"root": str(EXAMPLE)})
    # rea, the default before auto, with nothing added: no line to say so on every run
    assert config.strategy == "rea" and config.warm_start is None and getattr(config, "chosen", None) is None
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a))
    config = merge({"space": "nb201"})
    assert config.strategy == "local" and config.warm_start == "all" and "scikit-learn" in config.chosen


def test_the_run_says_what_auto_chose_and_records_the_choice(tmp_path, smooth):
    from click.testing import CliRunner

    from nader.cli import main

    run = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "--space", "nb201", "--evaluator", f"table:{smooth}", "--dataset", "cifar10",
                                  "--preset", "nb201-12",
                                  "--seeds", "777", "--trials", "6", "--warm-start", "0", "--proxy", "params",
                                  "--run-dir", str(run), "--progress", "off"])
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stderr.splitlines() if line.startswith("auto:")]
    assert lines == ["auto: predictor with no warm start (it found the development tables' best cells within 10 "
                     "queries; benchmarks/README.md)"]
    assert {rec["origin"] for rec in run_records(run) if rec["status"] in FINAL} == {"sample", "predictor"}
    again = CliRunner().invoke(main, ["run", "--run-dir", str(run), "--trials", "7", "--progress", "off"])
    assert again.exit_code == 0 and "auto:" not in again.stderr  # the run recorded the predictor, not auto
