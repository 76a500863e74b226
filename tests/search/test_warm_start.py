"""The zero-cost warm start (`--warm-start N --proxy P`): scored before the first query, never a
query itself, the pool handed out best first to every strategy, cached so a resume computes no
proxy, and data-free proxies with no `--data-dir`."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import derived_tables as D
from nader.cli import main
from nader.runtime.errors import ConfigError
from nader.search.session import run_search
from nader.search.tree import FINAL
from search_helpers import HashEvaluator, arch_rows, run_records, settings


def _cells(run, **extra):
    return {"space": "nb201", "dataset": "cifar100", "preset": "nb201-12", "seeds": [777], "run_dir": str(run),
            **extra}


def _warm(rec):
    return (rec["change"] or {}).get("warm_start")


def test_random_search_draws_the_pool_best_first_and_a_resume_computes_no_proxy(tmp_path):
    run = tmp_path / "run"
    first = run_search(_cells(run, strategy="random", trials=5, warm_start=16, proxy="synflow"),
                       evaluator=HashEvaluator())
    assert first.trials == 5  # scoring is no query
    pool = first.proxies["pool"]
    assert 0 < pool <= 16 and first.proxies["computed"] == pool and first.proxies["seconds"] > 0
    recs = [r for r in run_records(run) if r["status"] in FINAL]
    assert [_warm(r)["rank"] for r in recs] == [1, 2, 3, 4, 5]
    scores = [_warm(r)["scores"]["synflow"] for r in recs]
    assert scores == sorted(scores, reverse=True) and all(r["origin"] == "warm-start" for r in recs)
    again = run_search(_cells(run, strategy="random", trials=8, warm_start=16, proxy="synflow"),
                       evaluator=HashEvaluator())
    assert again.resumed and again.trials == 8
    assert again.proxies["computed"] == 0 and again.proxies["reused"] == pool  # every score from the store
    recs = [r for r in run_records(run) if r["status"] in FINAL]
    assert [_warm(r)["rank"] for r in recs] == list(range(1, 9))


@pytest.mark.parametrize("name", ["random", "rea", "local", "optuna", "walk", "predictor"])
def test_a_warm_started_search_resumed_grows_the_uninterrupted_tree(name, tmp_path):
    if name in ("optuna", "predictor"):
        pytest.importorskip({"optuna": "optuna", "predictor": "sklearn"}[name])
    options = {"rea": {"population": 3, "sample_size": 2}, "optuna": {"startup": 3},
               "predictor": {"initial": 3, "radius": 1}}.get(name, {})

    def config(run, trials):
        return _cells(run, strategy=name, strategy_options=options, trials=trials, warm_start=12,
                      proxy="synflow+params")

    whole = run_search(config(tmp_path / "whole", 8), evaluator=HashEvaluator())
    half = run_search(config(tmp_path / "parts", 4), evaluator=HashEvaluator())
    rest = run_search(config(tmp_path / "parts", 8), evaluator=HashEvaluator())
    assert rest.resumed and rest.stop.code == whole.stop.code
    # no score is computed twice: the predictor scores its trust region as it moves (the cells the first
    # part never met); the others score nothing after the warm start's pool
    assert half.proxies["computed"] + rest.proxies["computed"] == whole.proxies["computed"]
    assert (rest.proxies["computed"] > 0) == (name == "predictor")
    expected = arch_rows(tmp_path / "whole")
    assert arch_rows(tmp_path / "parts") == expected
    seeded = [r for r in run_records(tmp_path / "whole") if _warm(r)]
    assert seeded and _warm(seeded[0])["rank"] == 1  # every strategy starts from the pool's best
    if name in ("rea", "optuna"):  # REA's first population, Optuna's enqueued startup trials
        assert [_warm(r)["rank"] for r in seeded[:3]] == [1, 2, 3]
    if name == "local":
        assert seeded[0]["change"]["climb"] == 1
    if name == "predictor":  # its first trials are the pool's best, then the model's picks
        assert [_warm(r)["rank"] for r in seeded[:3]] == [1, 2, 3]
        assert any("predictor" in (r["change"] or {}) for r in run_records(tmp_path / "whole"))


def test_in_the_block_language_the_pool_is_mutations_of_the_root(tmp_path):
    run = tmp_path / "run"
    s = run_search(settings(run, strategy="rea", strategy_options={"population": 3, "sample_size": 1}, trials=4,
                            warm_start=4, proxy="synflow"), evaluator=HashEvaluator())
    recs = run_records(run)
    assert recs[0]["origin"] == "root" and recs[0]["status"] == "ok"  # the block language trains its root (a member)
    first = [r for r in recs if _warm(r)]
    assert [_warm(r)["rank"] for r in first] == [1, 2] and all(r["parent_id"] == 0 for r in first)
    assert first[0]["operator"] and first[0]["change"]["args"]  # a recorded, replayable mutation
    assert s.proxies["pool"] == s.proxies["computed"] == 4
    with pytest.raises(ConfigError, match="not finite"):
        run_search(settings(tmp_path / "all", warm_start="all"), evaluator=HashEvaluator())


@pytest.fixture(scope="module")
def smooth(tmp_path_factory):
    return D.write(tmp_path_factory.mktemp("smooth") / "smooth.csv")


def test_synflow_needs_no_data_dir_and_an_image_proxy_is_refused_without_one(tmp_path, smooth):
    runner = CliRunner()
    base = ["run", "--space", "nb201", "--evaluator", f"table:{smooth}", "--dataset", "cifar10", "--preset", "nb201-12",
            "--seeds", "777",
            "--progress", "off"]
    ok = runner.invoke(main, [*base, "--warm-start", "20", "--proxy", "synflow", "--prescreen", "2", "--trials", "3",
                              "--strategy", "random", "--run-dir", str(tmp_path / "a")])
    assert ok.exit_code == 0, ok.output
    assert "proxies: synflow:" in ok.output and "3 trials" in ok.output
    status = runner.invoke(main, ["status", str(tmp_path / "a")])
    assert "proxies: synflow:" in status.output and "architectures scored" in status.output
    report = runner.invoke(main, ["report", str(tmp_path / "a"), "-o", str(tmp_path / "a.html")])
    assert report.exit_code == 0 and 'id="proxies"' in (tmp_path / "a.html").read_text()
    refused = runner.invoke(main, [*base, "--warm-start", "20", "--proxy", "naswot", "--run-dir", str(tmp_path / "b")])
    assert refused.exit_code == 2 and "--data-dir" in refused.output and "synflow" in refused.output
    assert not (tmp_path / "b" / "runs.sqlite").exists()  # refused before anything was created
    bad = runner.invoke(main, [*base, "--proxy", "synflo", "--run-dir", str(tmp_path / "c")])
    assert bad.exit_code == 2 and "unknown proxy" in bad.output


def test_the_warm_start_is_part_of_the_runs_identity(tmp_path):
    run = tmp_path / "run"
    run_search(_cells(run, strategy="random", trials=2, warm_start=8), evaluator=HashEvaluator())
    with pytest.raises(ConfigError, match="warm_start"):
        run_search(_cells(run, strategy="random", trials=3, warm_start=9), evaluator=HashEvaluator())
