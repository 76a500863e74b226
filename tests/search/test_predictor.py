"""The predictor strategy (`--strategy predictor`): a model on encodings and proxy ranks picks among
the incumbent's trust region and the warm start's best."""
from __future__ import annotations

import importlib.util

import pytest

import derived_tables as D
from nader.runtime.errors import ConfigError
from nader.search.encodings import CELL_FEATURES, block_bag, cell_vector
from nader.search.session import run_search
from nader.search.spaces import nb201 as S
from nader.search.tree import FINAL
from search_helpers import EXAMPLE, HashEvaluator, run_records, settings

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def smooth(tmp_path_factory):
    return D.write(tmp_path_factory.mktemp("smooth") / "smooth.csv")


def _trials(run):
    return [r for r in run_records(run) if r["status"] in FINAL]


def _distance(a: str, b: str) -> int:
    return sum(x != y for x, y in zip(S.CellStructure.parse(a).ops, S.CellStructure.parse(b).ops))


def test_the_cell_encoding_is_one_hot_on_the_effective_cell_with_operation_counts():
    v = cell_vector(S.RESNET)  # conv3x3, none, conv3x3, skip, none, skip: every edge reaches the output
    one_hot, counts = v[:30], v[30:]
    assert len(v) == CELL_FEATURES == 35 and sum(one_hot) == 6 and set(one_hot) == {0.0, 1.0}
    assert counts == [sum(one_hot[e * 5 + i] for e in range(6)) for i in range(5)] and sum(counts) == 6
    assert dict(zip(S.OPS, counts)) == {"none": 2, "skip_connect": 2, "nor_conv_1x1": 0, "nor_conv_3x3": 2,
                                        "avg_pool_3x3": 0}
    # an operation that cannot reach the output is encoded as none: two strings of one network alike
    dead = "|nor_conv_3x3~0|+|none~0|nor_conv_1x1~1|+|skip_connect~0|none~1|none~2|"
    same = "|nor_conv_1x1~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|none~2|"
    assert cell_vector(dead) == cell_vector(same)
    bag = block_bag(EXAMPLE.read_text())
    assert bag["base:Conv2d/k3/s1"] == 2 and bag["base:Conv2d/k3/s1>BN"] == 2 and "stem:input" in bag


def test_it_finds_an_additive_tables_optimum_in_a_few_dozen_queries(tmp_path, smooth):
    """Local search needs 160 queries for this table (test_tables); the model needs far fewer."""
    s = run_search(D.table_settings(tmp_path / "run", smooth, strategy="predictor", trials=20, proxy="params",
                                    strategy_options={"radius": 1}))
    assert S.cell_of_text(s.best["text"]) == D.OPTIMUM
    recs = _trials(tmp_path / "run")
    initial, guided = recs[:5], recs[5:]
    assert all(r["origin"] == "sample" for r in initial)  # no warm start: uniform draws first
    assert guided and all(r["origin"] == "predictor" and r["change"]["predictor"]["trained_on"] >= 5 for r in guided)
    assert s.proxies and s.proxies["computed"] > 0  # the proxy is a feature: scored without a warm start


def test_proposals_stay_in_the_trust_region_of_the_incumbent(tmp_path, smooth):
    run_search(D.table_settings(tmp_path / "run", smooth, strategy="predictor", trials=12, proxy="params",
                                strategy_options={"radius": 1, "initial": 4}))
    recs = _trials(tmp_path / "run")
    for r in recs[4:]:
        change = r["change"]
        assert _distance(change["cell"], change["from"]) == 1 == change["predictor"]["distance"]
        earlier = [e for e in recs if e["arch_id"] < r["arch_id"]]
        assert change["from"] == max(earlier, key=lambda e: (e["valid_acc"], -e["arch_id"]))["change"]["cell"]


def test_a_warm_started_run_starts_from_the_pool_and_resumes_as_the_uninterrupted_one(tmp_path):
    def config(run, trials):
        return {"space": "nb201", "dataset": "cifar100", "preset": "nb201-12", "seeds": [777], "run_dir": str(run),
                "strategy": "predictor", "trials": trials, "warm_start": 40, "proxy": "params+flops",
                "strategy_options": {"initial": 3, "radius": 1}}

    whole = run_search(config(tmp_path / "whole", 9), evaluator=HashEvaluator())
    half = run_search(config(tmp_path / "parts", 5), evaluator=HashEvaluator())
    rest = run_search(config(tmp_path / "parts", 9), evaluator=HashEvaluator())
    assert rest.resumed and rest.stop.code == whole.stop.code
    # no score is computed twice: the resumed run scores only the candidates the first part never met
    assert half.proxies["computed"] + rest.proxies["computed"] == whole.proxies["computed"]
    a, b = run_records(tmp_path / "whole"), run_records(tmp_path / "parts")
    assert [(r["arch_id"], r["text"], r["status"]) for r in a] == [(r["arch_id"], r["text"], r["status"]) for r in b]
    recs = _trials(tmp_path / "whole")
    assert [r["change"]["warm_start"]["rank"] for r in recs[:3]] == [1, 2, 3]
    assert all("predictor" in r["change"] for r in recs[3:])


def test_with_two_objectives_it_scalarises_them_afresh_for_each_proposal(tmp_path, smooth):
    """ParEGO: the incumbent, and so the trust region's centre, moves along the front."""
    run_search(D.table_settings(tmp_path / "run", smooth, strategy="predictor", trials=12, proxy="params",
                                objectives=["valid_acc:max", "flops:min"], strategy_options={"radius": 1}))
    recs = _trials(tmp_path / "run")
    centres = {r["change"]["from"] for r in recs[5:]}
    assert len(centres) >= 2
    by_accuracy = [max((e for e in recs if e["arch_id"] < r["arch_id"]), key=lambda e: e["valid_acc"])["change"]["cell"]
                   for r in recs[5:]]
    assert any(r["change"]["from"] != best for r, best in zip(recs[5:], by_accuracy))  # not accuracy alone


def test_it_searches_the_block_language_by_mutations_of_the_best(tmp_path):
    s = run_search(settings(tmp_path / "run", strategy="predictor", trials=5, seeds=[0], proxy="params",
                            strategy_options={"initial": 2, "candidates": 4}), evaluator=HashEvaluator())
    assert s.trials == 5
    recs = _trials(tmp_path / "run")
    assert recs[0]["origin"] == "root"
    guided = [r for r in recs if "predictor" in (r["change"] or {})]
    assert guided and all(r["operator"] and r["change"]["args"] is not None for r in guided)


def test_without_scikit_learn_it_is_refused_before_the_first_trial(tmp_path, smooth, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a))
    with pytest.raises(ConfigError, match="nader-toolchain\\[data\\]"):
        run_search(D.table_settings(tmp_path / "run", smooth, strategy="predictor", trials=3))


def test_an_acquisition_that_weighs_a_spread_is_refused_with_a_single_ridge(tmp_path, smooth):
    with pytest.raises(ConfigError, match="a single ridge has none: use --option model=ensemble"):
        run_search(D.table_settings(tmp_path / "run", smooth, strategy="predictor", trials=3,
                                    strategy_options={"acquisition": "ei"}))
    s = run_search(D.table_settings(tmp_path / "ok", smooth, strategy="predictor", trials=7, proxy="params",
                                    strategy_options={"acquisition": "ei", "model": "ensemble"}))
    assert s.trials == 7
