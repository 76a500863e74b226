"""Local search and REA in the nb201 space on generated tables: `local` climbs from a uniform
draw and reaches a known optimum in a rugged table; REA's first population is uniform draws."""
from __future__ import annotations

import csv
import random
import sqlite3

import pytest

import derived_tables as D
from derived_tables import table_settings as _settings
from search_helpers import run_records as _records
from nader.search import records
from nader.search.session import run_search
from nader.search.spaces import nb201 as S
from nader.search.spaces.space import NB201Space

RUGGED_TOP = 100.0


def rugged_accuracy(cell) -> float:
    """The additive table plus up to 6 points of per-cell noise, more than one edge's best
    operation gains over the others (1.95 or more): the table has local optima. The additive
    optimum is lifted to 100 so that it stays the global one."""
    if S.as_cell(cell) == D.OPTIMUM:
        return RUGGED_TOP
    return round(D.smooth_accuracy(cell) + random.Random(f"rugged/{cell}").uniform(0, 6), 4)


@pytest.fixture(scope="module")
def rugged(tmp_path_factory):
    path = tmp_path_factory.mktemp("rugged") / "rugged.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["arch", "valid_acc@12", "test_acc@200", "epoch_seconds"])
        for cell in S.all_cells():
            acc = rugged_accuracy(cell)
            w.writerow([str(cell), acc, acc, 10.0])
    return path






def _local_optima() -> int:
    """How many cells of the rugged table no neighbour improves on (the table is rugged)."""
    space = NB201Space()
    return sum(all(rugged_accuracy(n) <= rugged_accuracy(c) for n, _ in space.neighbours(c)) for c in S.all_cells())


def test_the_rugged_table_has_local_optima_besides_the_global_one():
    assert _local_optima() > 1


def test_local_search_reaches_the_known_optimum_in_most_seeds(tmp_path, rugged):
    """Uniform sampling would meet the optimum within 150 trials with probability 1 %; a
    one-edge climb with restarts meets it in most seeds."""
    hits = 0
    for seed in range(5):
        s = run_search(_settings(tmp_path / f"s{seed}", rugged, strategy="local", trials=150, seed=seed))
        hits += s.best["valid_acc"] == pytest.approx(RUGGED_TOP)
    assert hits >= 4


def test_each_climb_starts_at_a_uniform_draw_and_seeds_start_apart(tmp_path, rugged):
    starts = []
    for seed in (0, 1):
        run_search(_settings(tmp_path / f"s{seed}", rugged, strategy="local", trials=60, seed=seed))
        recs = _records(tmp_path / f"s{seed}")
        first = recs[1]
        assert first["change"]["climb"] == 1 and first["parent_id"] == 0 and first["origin"] == "sample"
        starts.append(first["change"]["cell"])
        # the next proposals are the start's one-edge neighbours, each once
        hood = {str(c) for c, _ in NB201Space().neighbours(S.CellStructure.parse(first["change"]["cell"]))}
        proposed = [r for r in recs if r["parent_id"] == first["arch_id"]]
        assert {str(S.cell_of_text(r["text"])) for r in proposed} <= hood
        assert len({r["change"]["cell"] for r in proposed}) == len(proposed) > 12
    assert starts[0] != starts[1] and str(S.CellStructure.parse(S.RESNET)) not in starts


def test_the_best_reported_is_the_best_by_the_signal_over_every_climb(tmp_path, rugged):
    s = run_search(_settings(tmp_path / "run", rugged, strategy="local", trials=120, seed=3))
    recs = [r for r in _records(tmp_path / "run") if r["status"] == "ok"]
    assert max(r["change"].get("climb", 0) for r in recs if r["change"]) >= 2  # more than one climb
    assert s.best["valid_acc"] == max(r["valid_acc"] for r in recs)


def test_rea_fills_its_first_population_with_uniform_draws_in_the_nb201_space(tmp_path, rugged):
    s = run_search(_settings(tmp_path / "run", rugged, strategy="rea", trials=40, seed=0,
                             strategy_options={"population": 10, "sample_size": 3}))
    assert s.trials == 40
    recs = [r for r in _records(tmp_path / "run") if r["status"] == "ok"]  # the root is untrained (--root none)
    draws, rest = recs[:10], recs[10:]
    assert all(r["origin"] == "sample" and r["parent_id"] == 0 for r in draws)
    assert len({r["change"]["cell"] for r in draws}) == 10
    # then tournaments among the population: one-edge mutations, never of the root (not a member)
    assert rest and all(r["operator"] == "nb201-edge" and r["parent_id"] != 0 for r in rest)


def test_the_synthetic_table_has_one_optimum_chance_level_broken_cells_and_shared_graphs():
    """`benchmarks/nb201_synthetic.py`: one cell at NB201's 94.37 %, zero-output cells at chance,
    and strings that denote one graph (a skip chain read two ways) only differ by noise."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import nb201_synthetic as G

    rows = G.table(seed=1)
    test = {k: r["test_acc@200"] for k, r in rows.items()}
    assert max(test.values()) == 94.37 and sum(v == 94.37 for v in test.values()) == 1
    assert all(test[str(c)] < 11 for c in S.all_cells() if 3 in c.zero_nodes())
    assert 80 < sum(test.values()) / len(test) < 92
    # node 1 a skip of the input: its convolution to node 3 is the input's
    a = S.CellStructure.parse("|skip_connect~0|+|none~0|none~1|+|none~0|nor_conv_3x3~1|none~2|")
    b = S.CellStructure.parse("|none~0|+|none~0|none~1|+|nor_conv_3x3~0|none~1|none~2|")
    assert S.cell_hash(a) == S.cell_hash(b) and G.paths(a) == G.paths(b)
    assert abs(test[str(a)] - test[str(b)]) < 1.5 and test[str(a)] != test[str(b)]
