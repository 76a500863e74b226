"""Several objectives (`--objective`, SEARCH.toml's `objective`, the API's `directions`): parsing
and refusals, the store keeps every objective (an older store gains the column), `best --pareto`
is the non-dominated set, the report draws the front, strategies rank by non-domination, and
latency is measured by the runtime."""
from __future__ import annotations

import itertools
import json
import random
import sqlite3
import sys

import pytest
from click.testing import CliRunner

import derived_tables as D
from derived_tables import table_settings
from nader.cli import main
from nader.runtime.errors import ConfigError
from nader.search.config_file import read_toml
from nader.search.objectives import DEFAULT, Objective, dominates, pareto_set, parse_objectives
from nader.search.session import run_search
from nader.search.strategies import get_strategy
from nader.search.strategies.base import SearchContext
from nader.search.tree import TreeNode, Tree
from search_helpers import run_records, settings

TWO = ["valid_acc:max", "params:min"]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("objectives") / "table.csv"
    D.write(path)
    return path


def test_objectives_parse_with_their_usual_direction_and_refuse_what_is_unclear():
    assert parse_objectives("valid_acc:max, params:MIN") == (Objective("valid_acc", "max"), Objective("params", "min"))
    assert parse_objectives(["latency", "flops"]) == (Objective("latency", "min"), Objective("flops", "min"))
    assert parse_objectives("loss:minimize") == (Objective("loss", "min"),)
    for bad, why in [("loss", "give its direction"), ("valid_acc:up", "max or min"), ("a b:max", "NAME:max"),
                     ("params:min,params:max", "named twice"), ("", "at least one")]:
        with pytest.raises(ConfigError, match=why):
            parse_objectives(bad)


def _brute_front(points):
    return {i for i, p in enumerate(points)
            if not any(all(b <= a for a, b in zip(p, q)) and any(b < a for a, b in zip(p, q)) for q in points)}


@pytest.mark.parametrize("seed", range(5))
def test_the_pareto_set_is_every_non_dominated_record_in_the_first_objectives_order(seed):
    rng = random.Random(seed)
    recs = [{"arch_id": i, "status": "ok", "valid_acc": rng.choice([50.0, 60.0, 70.0, 80.0]),
             "params": rng.choice([100, 200, 300]), "objectives": {"energy": rng.random()}} for i in range(40)]
    recs.append({"arch_id": 99, "status": "failed", "valid_acc": 100.0, "params": 1, "objectives": {"energy": 0.0}})
    objectives = parse_objectives("valid_acc:max,params:min,energy:min")
    front = pareto_set(recs, objectives)
    ok = recs[:40]
    expected = _brute_front([(-r["valid_acc"], r["params"], r["objectives"]["energy"]) for r in ok])
    assert {r["arch_id"] for r in front} == expected
    assert [r["valid_acc"] for r in front] == sorted((r["valid_acc"] for r in front), reverse=True)


def test_the_objective_setting_reads_from_toml_and_changing_it_on_resume_is_refused(tmp_path, table):
    toml = tmp_path / "SEARCH.toml"
    toml.write_text('objective = ["valid_acc:max", "flops:min"]\n')
    assert read_toml(toml)["objectives"] == ["valid_acc:max", "flops:min"]
    run = tmp_path / "run"
    run_search(table_settings(run, table, strategy="random", trials=3, objectives=TWO))
    with pytest.raises(ConfigError, match="objectives"):
        run_search(table_settings(run, table, strategy="random", trials=4, objectives=["valid_acc:max"]))


@pytest.mark.parametrize("strategy,options", [("rea", {"population": 4, "sample_size": 3}), ("local", {}),
                                              ("tree", {"selection": "top-k", "k": 2}), ("random", {})])
def test_each_strategy_searches_several_objectives_and_best_pareto_lists_the_front(tmp_path, table, strategy,
                                                                                    options):
    run = tmp_path / "run"
    args = ["run", "--space", "nb201", "--dataset", "cifar10", "--evaluator", f"table:{table}", "--preset",
            "nb201-12", "--seeds", "777", "--strategy", strategy, "--objective", "valid_acc:max,params:min",
            "--trials", "12", "--run-dir", str(run), "--format", "json"]
    for key, value in options.items():
        args += ["--option", f"{key}={value}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    recs = [r for r in run_records(run) if r["status"] == "ok"]
    assert len(recs) >= 8
    best = CliRunner().invoke(main, ["best", str(run), "--pareto", "--format", "json"])
    assert best.exit_code == 0, best.output
    listed = json.loads(best.stdout)
    assert {r["arch_id"] for r in listed} == \
        {recs[i]["arch_id"] for i in _brute_front([(-r["valid_acc"], r["params"]) for r in recs])}
    table_out = CliRunner().invoke(main, ["best", str(run), "--pareto"])
    assert table_out.exit_code == 0 and table_out.output.splitlines()[0].split() == ["arch", "valid_acc", "params",
                                                                                     "flops", "test_acc"]
    # The summary's best is the front's most accurate.
    assert json.loads(result.stdout)["best"]["arch_id"] == listed[0]["arch_id"]


def test_the_report_draws_the_objectives_front(tmp_path, table):
    run = tmp_path / "run"
    run_search(table_settings(run, table, strategy="random", trials=6, objectives=["valid_acc:max", "flops:min"]))
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert 'id="plot-objectives"' in html and "flops:min against valid_acc:max" in html
    single = tmp_path / "one"
    run_search(table_settings(single, table, strategy="random", trials=3))
    CliRunner().invoke(main, ["report", str(single), "-o", str(tmp_path / "one.html")])
    assert 'id="plot-objectives"' not in (tmp_path / "one.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------------- refusals, before any trial


def _table_run(table):
    return ["run", "--space", "nb201", "--dataset", "cifar10", "--evaluator", f"table:{table}", "--preset", "nb201-12",
            "--seeds", "777"]


def test_several_objectives_without_pymoo_are_refused_up_front_with_one_line(tmp_path, table, monkeypatch):
    monkeypatch.setitem(sys.modules, "pymoo", None)
    run = tmp_path / "run"
    result = CliRunner().invoke(main, [*_table_run(table), "--objective", "valid_acc:max,params:min",
                                       "--trials", "3", "--run-dir", str(run)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if not line.startswith("table ")]  # the table's summary
    assert lines == ["error: several objectives need pymoo for non-dominated sorting: "
                     "pip install 'nader-toolchain[pareto]'"]
    assert not (run / "runs.sqlite").exists()


@pytest.mark.parametrize("objective,why", [("energy:min", "unknown objective energy"),
                                           ("valid_acc:max,latency:min", "latency is measured after training")])
def test_an_objective_the_evaluator_cannot_give_is_refused_up_front(tmp_path, table, objective, why):
    result = CliRunner().invoke(main, [*_table_run(table), "--objective", objective, "--trials", "3",
                                       "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2 and why in result.output


# ---------------------------------------------------------------------- the store


def test_an_older_store_without_the_objectives_columns_is_read_and_gains_them_on_resume(tmp_path, table):
    run = tmp_path / "run"
    run_search(table_settings(run, table, strategy="random", trials=3))
    conn = sqlite3.connect(str(run / "runs.sqlite"))
    conn.execute("ALTER TABLE archs DROP COLUMN objectives")
    conn.execute("ALTER TABLE arch_seeds DROP COLUMN objectives")
    conn.commit()
    conn.close()
    status = CliRunner().invoke(main, ["best", str(run), "--format", "json"])
    assert status.exit_code == 0, status.output
    assert run_search(table_settings(run, table, strategy="random", trials=5)).trials == 5
    conn = sqlite3.connect(str(run / "runs.sqlite"))
    for name in ("archs", "arch_seeds"):
        assert "objectives" in {r[1] for r in conn.execute(f"PRAGMA table_info({name})")}
    conn.close()


def test_latency_is_measured_after_training_and_kept_per_architecture(tmp_path):
    run = tmp_path / "run"
    summary = run_search(settings(run, trials=2, objectives=["valid_acc:max", "latency:min"]))
    assert summary.trials == 2
    recs = [r for r in run_records(run) if r["status"] == "ok"]
    assert recs and all(r["objectives"]["latency"] > 0 for r in recs)


def test_measure_latency_times_a_forward_pass():
    import torch

    from nader.runtime.latency import measure_latency

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.LazyLinear(2))
    model.train()
    assert measure_latency(model, 8, "cpu", repeats=3) > 0
    assert model.training  # left as it was


# ---------------------------------------------------------------------- ranking inside strategies


def _node(i, acc, params, status="ok"):
    return TreeNode(arch_id=i, parent_id=None if i == 0 else 0, depth=0 if i == 0 else 1, status=status, text=f"t{i}",
                valid_acc=acc, params=params, flops=params)


NODES = [_node(0, 70.0, 500), _node(1, 80.0, 900), _node(2, 60.0, 100), _node(3, 65.0, 800), _node(4, 75.0, 950)]
FRONT = {0, 1, 2}  # 3 is dominated by 0; 4 by 1


def _bound(name, **options):
    strategy = get_strategy(name)(**options)
    strategy.bind(SearchContext(objectives=parse_objectives(TWO)))
    return strategy


def test_rea_tournament_takes_a_member_of_the_samples_non_dominated_set():
    rea = _bound("rea", population=5, sample_size=5)
    for n in NODES:
        rea.tell(n, random.Random(0))
    for seed in range(10):
        winner = rea.ask(Tree(NODES), random.Random(seed))
        assert winner.arch_id == 1  # the whole population is sampled: the front's most accurate
    small = _bound("rea", population=5, sample_size=2)
    for n in NODES:
        small.tell(n, random.Random(0))
    for seed in range(20):
        rng = random.Random(seed)
        sample = random.Random(seed).sample(list(small.population), 2)
        winner = small.ask(Tree(NODES), rng)
        front = [n for n in sample if not any(dominates(m, n, parse_objectives(TWO)) for m in sample)]
        assert winner in front


def test_local_moves_only_to_a_dominating_neighbour():
    local = _bound("local")
    objectives = parse_objectives(TWO)
    assert local._better(_node(7, 71.0, 400), NODES[0]) and dominates(_node(7, 71.0, 400), NODES[0], objectives)
    assert not local._better(NODES[1], NODES[0])  # more accurate but larger: no move
    assert _bound("local", neighbours=24).several and not get_strategy("local")().several


@pytest.mark.parametrize("selection", ["top-k", "nader", "uniform"])
def test_tree_policies_see_the_non_domination_rank(selection):
    tree_strategy = _bound("tree", selection=selection, k=1)
    for seed in range(10):
        chosen = tree_strategy.ask(Tree(NODES), random.Random(seed))
        assert chosen is not None and chosen.arch_id in {n.arch_id for n in NODES}
        if selection == "top-k":
            assert chosen.arch_id in FRONT and chosen.arch_id == 2  # rank 0, fewest parameters first


def test_one_objective_by_default_keeps_the_accuracy_ranking():
    rea = get_strategy("rea")(population=5, sample_size=5)
    rea.bind(SearchContext())
    assert rea.objectives == DEFAULT and not rea.several
    for n in NODES:
        rea.tell(n, random.Random(0))
    assert rea.ask(Tree(NODES), random.Random(0)).arch_id == 1


def test_dominates_treats_a_missing_value_as_worst():
    objectives = parse_objectives(TWO)
    assert dominates(NODES[0], _node(9, None, 100), objectives)
    assert not dominates(_node(9, None, 100), NODES[0], objectives)
    assert not any(dominates(a, b, objectives) for a, b in itertools.permutations([NODES[0], NODES[0]]))
