"""Derived tables as evaluators (`table:FILE.csv|FILE.json`), tables with holes, uniform random
search, local search and the simulated-time budget, on generated tables only."""
from __future__ import annotations

import json
import random
import sqlite3

import pytest

import derived_tables as D
from nader.runtime.errors import ConfigError
from nader.search import records
from nader.search.config import merge
from nader.search.config_file import parse_time_limit, read_toml
from nader.search.tables.derived import FileTable
from nader.search.tables.base import TableError
from nader.search.session import run_search
from nader.search.spaces import nb201 as S
from nader.search.spaces.space import NB201Space
from derived_tables import table_settings as _settings
from search_helpers import run_records as _records
from search_helpers import settings as digits_settings

ROOT = S.CellStructure.parse(S.RESNET)
NEIGHBOURS = [c for c, _ in NB201Space().neighbours(ROOT)]






def _local_start(tmp_path, seed: int = 0) -> S.CellStructure:
    """The cell where `local`'s first climb starts for `seed`: a uniform draw that depends on the
    seed and the root only, so a table written around it afterwards gets the same start."""
    path = tmp_path / "start.csv"
    path.write_text(f"arch,valid_acc@12\n{ROOT},90\n")
    run_search(_settings(tmp_path / "start", path, strategy="local", trials=2, seed=seed))
    start = next(r for r in _records(tmp_path / "start") if (r["change"] or {}).get("climb") == 1)
    return S.CellStructure.parse(start["change"]["cell"])


@pytest.fixture(scope="module")
def smooth(tmp_path_factory):
    return D.write(tmp_path_factory.mktemp("smooth") / "smooth.csv")


@pytest.fixture(scope="module")
def holey(tmp_path_factory):
    """Every cell, but a fifth left out and a seventh without numbers; the root and its first
    neighbours keep theirs, so mutation strategies have somewhere to start."""
    keep = {str(ROOT), *map(str, NEIGHBOURS[:6])}
    cells = [c for c in S.all_cells() if str(c) not in keep]
    return D.write(tmp_path_factory.mktemp("holes") / "holes.json", "json", absent=cells[::5], blank=cells[1::7])


# ---------------------------------------------------------------------- reading tables


@pytest.mark.parametrize("layout", ["csv", "json"])
def test_both_layouts_answer_with_the_written_numbers(tmp_path, layout):
    cells = [ROOT, *NEIGHBOURS[:3]]
    table = FileTable(D.write(tmp_path / f"t.{layout}", layout, cells=cells, blank=[NEIGHBOURS[2]]))
    for cell in cells[:3]:
        rec = table.evaluate(S.architecture(cell), "cifar10-valid", 12, 777, test_epochs=200)
        assert rec.arch == str(cell) and rec.valid_acc == pytest.approx(D.smooth_accuracy(cell))
        assert rec.test_acc == pytest.approx(D.row(cell)["test_acc@200"])
        assert rec.seconds == pytest.approx(12 * D.row(cell)["epoch_seconds"]) and rec.params == 1000
    with pytest.raises(TableError) as hole:
        table.evaluate(str(NEIGHBOURS[2]), "cifar10-valid", 12)
    assert hole.value.kind == "missing-value" and str(NEIGHBOURS[2]) in str(hole.value)
    with pytest.raises(TableError) as absent:
        table.evaluate(str(NEIGHBOURS[5]), "cifar10-valid", 12)
    assert absent.value.kind == "missing-entry"
    with pytest.raises(TableError) as epoch:
        table.evaluate(str(ROOT), "cifar10-valid", 200)
    assert epoch.value.kind == "missing-epoch" and "--table-map valid_acc@200=COLUMN" in str(epoch.value)
    with pytest.raises(TableError) as outside:
        table.evaluate("|conv~0|+|x~0|y~1|+|a~0|b~1|c~2|", "cifar10-valid", 12)
    assert outside.value.kind == "not-in-space"


def test_a_table_map_names_other_columns_and_dataset_columns_win(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({
        str(ROOT): {"val12": 70.5, "final_test": 93.1, "cifar10-valid": {"val12": 71.5}},
        "not a cell": {"val12": 1},
        str(NEIGHBOURS[0]): {"val12": None, "final_test": 90.0},
    }))
    table = FileTable(path, {"valid_acc@12": "val12", "test_acc@200": "final_test"})
    rec = table.evaluate(str(ROOT), "cifar10-valid", 12, test_epochs=200)
    assert (rec.valid_acc, rec.test_acc, rec.seconds) == (71.5, 93.1, None)  # cifar10-valid's own column wins
    assert table.evaluate(str(ROOT), "cifar100", 12).valid_acc == 70.5
    summary = "\n".join(table.summary("cifar10-valid"))
    assert "2 cells of the NAS-Bench-201 space (15,623 of 15,625 absent)" in summary
    assert "1 rows name no NAS-Bench-201 cell" in summary and "'not a cell'" in summary
    assert "valid_acc@12 (cifar10-valid:val12): 1 cells without a value" in summary


@pytest.mark.parametrize("text,message", [
    ("arch,valid\n|x|,1\n", None),  # a CSV whose only row is no cell: loads, with the warning
    ("name,valid\n", "needs a header row with an `arch` column"),
    ("[1, 2]", "expected {arch: {metric: value}}"),
])
def test_malformed_tables_are_refused_with_the_reason(tmp_path, text, message):
    path = tmp_path / ("t.json" if text.startswith("[") else "t.csv")
    path.write_text(text)
    if message is None:
        assert any("name no NAS-Bench-201 cell" in line for line in FileTable(path).summary())
        return
    with pytest.raises(TableError, match=message.replace("{", r"\{").replace("}", r"\}")):
        FileTable(path)


# ---------------------------------------------------------------------- searching tables with holes


@pytest.mark.parametrize("strategy", ["walk", "random", "rea", "tree", "local"])
def test_every_offline_strategy_runs_a_table_with_holes_to_the_end(tmp_path, holey, strategy):
    options = {"population": 5, "sample_size": 2} if strategy == "rea" else {}
    s = run_search(_settings(tmp_path / "run", holey, strategy=strategy, strategy_options=options, trials=40))
    assert s.stop.code == "trials" and s.trials == 40 and s.best is not None
    recs = _records(tmp_path / "run")
    failed = [r for r in recs if r["status"] == "failed"]
    kinds = {r["seeds"][0]["error_kind"] for r in failed}
    assert kinds <= {"missing-entry", "missing-value"}
    for r in failed:
        assert str(S.cell_of_text(r["text"])) in r["seeds"][0]["error"]
    if strategy in ("random", "local"):  # a fifth of the cells are holes; both draw far enough to meet some
        assert failed


def test_holes_in_an_official_nats_bench_file_are_failed_trials(tmp_path):
    """The researcher's crash: a cell without the 12-epoch schedule (KeyError/ValueError in the API)
    and a None accuracy (float(None)). Local search evaluates its start's whole neighbourhood, so
    it meets every hole, records each as a failed trial with its kind, and goes on."""
    pytest.importorskip("nats_bench.api_utils")
    import nb201_table as T

    start = _local_start(tmp_path)
    hood = [c for c, _ in NB201Space().neighbours(start)
            if S.cell_hash(c) not in {S.cell_hash(start), S.cell_hash(ROOT)}][:3]  # no stand-ins for them
    holes = {hood[0]: "absent", hood[1]: "no-12", hood[2]: "none-valid"}
    cells = [ROOT, start, *(c for c, _ in NB201Space().neighbours(start))]
    path = T.write_table("nats-bench", tmp_path, list({str(c): c for c in cells}.values()), holes=holes)
    s = run_search({"space": "nb201", "dataset": "cifar10", "evaluator": f"nats-bench:{path}", "preset": "nb201-12",
                    "seeds": [777], "strategy": "local", "trials": 30, "run_dir": str(tmp_path / "run")})
    assert s.stop.code == "trials" and s.trials == 30
    by_cell = {str(S.cell_of_text(r["text"])): r for r in _records(tmp_path / "run") if r["text"]}
    expected = {hood[0]: "missing-entry", hood[1]: "missing-epoch", hood[2]: "missing-value"}
    for cell, kind in expected.items():
        rec = by_cell[str(cell)]
        assert rec["status"] == "failed" and rec["seeds"][0]["error_kind"] == kind, rec["seeds"]
    others = [r for c, r in by_cell.items() if c not in map(str, expected) and r["status"] == "failed"]
    assert all(r["seeds"][0]["error_kind"] == "missing-entry" for r in others)  # moved past the table's cells
    assert by_cell[str(ROOT)]["status"] == "untrained"  # local in the cell space: --root none


def test_the_reported_test_accuracy_is_the_200_epoch_one_of_the_best_by_validation(tmp_path):
    pytest.importorskip("nats_bench.api_utils")
    import nb201_table as T

    start = _local_start(tmp_path)
    cells = list({str(c): c for c in [ROOT, start, *(c for c, _ in NB201Space().neighbours(start))]}.values())
    path = T.write_table("nats-bench", tmp_path, cells, final=True)
    s = run_search({"space": "nb201", "dataset": "cifar10", "evaluator": f"nats-bench:{path}", "preset": "nb201-12",
                    "seeds": [777], "strategy": "local", "trials": 30, "run_dir": str(tmp_path / "run")})
    assert not s.warnings
    best = max(cells, key=T.valid_accuracy)
    assert S.cell_of_text(s.best["text"]) == best
    assert s.best["valid_acc"] == pytest.approx(T.valid_accuracy(best))  # the signal: 12 epochs
    assert s.best["test_acc"] == pytest.approx(T.final_test_accuracy(best))  # the figure: 200 epochs
    # a table without the 200-epoch schedule reports the budget's test accuracy and says so
    path12 = T.write_table("nats-bench", tmp_path, cells)
    s = run_search({"space": "nb201", "dataset": "cifar10", "evaluator": f"nats-bench:{path12}",
                    "preset": "nb201-12", "seeds": [777], "strategy": "walk", "trials": 3,
                    "run_dir": str(tmp_path / "run12")})
    assert s.warnings == ["the table has no 200-epoch test accuracy; the test accuracy recorded is at 12 epochs"]


# ---------------------------------------------------------------------- random and local search


def test_uniform_sampling_without_replacement_covers_the_space_without_duplicates():
    space, seen, order = NB201Space(), set(), []
    rng = random.Random(0)
    for _ in range(S.SPACE_SIZE):
        cand = space.sample(rng, seen)
        seen.add(cand.change["cell"])
        order.append(cand.change["cell"])
    assert len(set(order)) == S.SPACE_SIZE == len(order)
    assert space.sample(rng, seen) is None
    assert S.cell_of_text(NB201Space().sample(random.Random(1), set()).text) == \
        S.CellStructure.parse(NB201Space().sample(random.Random(1), set()).change["cell"])


def test_random_search_draws_distinct_cells_reproducibly_and_resumes_the_same_sequence(tmp_path, smooth):
    whole = run_search(_settings(tmp_path / "whole", smooth, strategy="random", trials=30))
    run_search(_settings(tmp_path / "parts", smooth, strategy="random", trials=12))
    parts = run_search(_settings(tmp_path / "parts", smooth, strategy="random", trials=30))
    assert whole.stop.code == parts.stop.code == "trials" and parts.resumed
    a, b = _records(tmp_path / "whole"), _records(tmp_path / "parts")
    assert [(r["arch_id"], r["text"], r["status"]) for r in a] == [(r["arch_id"], r["text"], r["status"]) for r in b]
    drawn = [r["change"]["cell"] for r in a[1:]]
    assert len(drawn) == len(set(drawn)) and str(ROOT) not in drawn
    assert all(r["parent_id"] == 0 and r["origin"] == "sample" for r in a[1:])
    other = run_search(_settings(tmp_path / "seed1", smooth, strategy="random", trials=30, seed=1))
    assert other.trials == 30
    assert [r["change"]["cell"] for r in _records(tmp_path / "seed1")[1:]] != drawn


def test_local_search_finds_the_known_optimum_and_rebuilds_its_climb_on_resume(tmp_path, smooth):
    s = run_search(_settings(tmp_path / "whole", smooth, strategy="local", trials=160))
    assert S.cell_of_text(s.best["text"]) == D.OPTIMUM
    assert s.best["valid_acc"] == pytest.approx(D.smooth_accuracy(D.OPTIMUM))
    run_search(_settings(tmp_path / "parts", smooth, strategy="local", trials=37))
    run_search(_settings(tmp_path / "parts", smooth, strategy="local", trials=160))
    a, b = _records(tmp_path / "whole"), _records(tmp_path / "parts")
    assert [(r["arch_id"], r["text"]) for r in a] == [(r["arch_id"], r["text"]) for r in b]
    # the climb starts at a uniform draw (not the root), whose whole neighbourhood comes next
    start = a[1]
    assert start["change"]["climb"] == 1 and start["origin"] == "sample" and start["change"]["cell"] != str(ROOT)
    hood = {str(c) for c, _ in NB201Space().neighbours(S.CellStructure.parse(start["change"]["cell"]))}
    first = [r for r in a[2:] if r["parent_id"] == start["arch_id"]]
    assert {r["change"]["cell"] for r in first} == hood


def test_local_search_restarts_from_a_uniform_draw_at_a_local_optimum(tmp_path):
    """The start is the best cell of a table holding only it, its neighbours and the root: after
    the neighbourhood, the climb restarts (a uniform draw, numbered in `change`)."""
    start = _local_start(tmp_path)
    hood = [c for c, _ in NB201Space().neighbours(start)]
    cells = list({str(c): c for c in [ROOT, start, *hood]}.values())
    path = tmp_path / "t.csv"
    path.write_text("arch,valid_acc@12\n" + "".join(f"{c},{90 if c == start else 50 + i * 0.1}\n"
                                                    for i, c in enumerate(cells)))
    run_search(_settings(tmp_path / "run", path, strategy="local", trials=40))
    recs = _records(tmp_path / "run")
    climbs = [r for r in recs if r["change"] and r["change"].get("climb")]
    assert [r["change"]["climb"] for r in climbs[:2]] == [1, 2]
    assert climbs[0]["change"]["cell"] == str(start)
    evaluated_hood = [r for r in recs if r["parent_id"] == climbs[0]["arch_id"]]
    assert evaluated_hood and max(r["arch_id"] for r in evaluated_hood) < climbs[1]["arch_id"]
    assert climbs[1]["seeds"][0]["error_kind"] == "missing-entry"  # drawn from the whole space


def test_random_is_refused_in_the_block_language_with_a_hint(tmp_path):
    with pytest.raises(ConfigError, match="use --strategy walk"):
        run_search(digits_settings(tmp_path / "run", strategy="random"))


def test_local_search_in_the_block_language_proposes_single_mutations_of_the_root(tmp_path):
    s = run_search(digits_settings(tmp_path / "run", strategy="local", trials=3,
                                   strategy_options={"neighbours": 4}))
    assert s.trials == 3
    children = [r for r in _records(tmp_path / "run")[1:]]
    assert children and all(r["parent_id"] == 0 and r["change"]["neighbour"] for r in children)
    assert len({r["change"]["neighbour"] for r in children}) == len(children)


# ---------------------------------------------------------------------- the simulated-time budget


def test_the_search_stops_on_simulated_time(tmp_path, smooth):
    s = run_search(_settings(tmp_path / "run", smooth, strategy="random", trials=1000, time_limit="sim:2000"))
    assert s.stop.code == "sim-time-limit"
    seconds = [r["seconds"] for r in _records(tmp_path / "run") if r["status"] == "ok"]
    assert sum(seconds) >= 2000 > sum(seconds[:-1])  # no trial starts once the budget is used
    assert all(sec == pytest.approx(12 * (D.EPOCH_SECONDS + k)) for sec, k in
               zip(seconds, (S.cell_of_text(r["text"]).ops.count("nor_conv_3x3")
                             for r in _records(tmp_path / "run") if r["status"] == "ok")))


def test_time_limits_parse_as_wall_or_simulated_seconds(tmp_path):
    assert parse_time_limit("10m") == 600.0 and parse_time_limit(90) == 90.0
    assert parse_time_limit("sim:20000") == "sim:20000" and parse_time_limit("SIM: 2h") == "sim:7200"
    for bad in ("sim:", "sim:-5", "soon", "0"):
        with pytest.raises(ConfigError, match="time-limit"):
            parse_time_limit(bad)
    toml = tmp_path / "s.toml"
    toml.write_text('time-limit = "sim:40000"\ntable-map = {"valid_acc@12" = "val"}\n')
    config = merge(read_toml(toml))
    assert (config.sim_time_limit, config.time_limit, config.table_map) == (40000.0, None, {"valid_acc@12": "val"})
    assert merge({"time_limit": 30.0}).time_limit == 30.0


def test_the_command_line_prints_the_tables_summary_and_maps_columns(tmp_path):
    from click.testing import CliRunner

    from nader.cli import main

    path = tmp_path / "t.csv"
    path.write_text(f"arch,val,final,secs\n{ROOT},70,93,10\n{NEIGHBOURS[0]},,91,9\nbogus,1,2,3\n")
    r = CliRunner().invoke(main, ["run", "--space", "nb201", "--evaluator", f"table:{path}", "--table-map",
                                  "valid_acc@12=val,test_acc@200=final,epoch_seconds=secs", "--dataset", "cifar10",
                                  "--preset", "nb201-12", "--seeds", "777", "--strategy", "walk", "--trials", "4",
                                  "--time-limit", "sim:100", "--run-dir", str(tmp_path / "run"), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert "table t.csv: 2 cells of the NAS-Bench-201 space" in r.stderr and "'bogus'" in r.stderr
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "sim-time-limit" and out["trials"] == 1  # the root's 120 s spend the budget
    assert (out["best"]["valid_acc"], out["best"]["test_acc"], out["best"]["seconds"]) == (70.0, 93.0, 120.0)
    bad = CliRunner().invoke(main, ["run", "--space", "nb201", "--evaluator", f"table:{path}", "--table-map", "x=y",
                                    "--run-dir", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "unknown metric 'x'" in bad.output
