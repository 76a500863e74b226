"""Searches over NAS-Bench-201's cell space with a tabular evaluator (`--space nb201 --evaluator
nats-bench:PATH`): random search and REA complete and resume, mutations stay in the space,
every answer is the table's, architectures outside the space are refused, and the report's time
axis is the simulated training time."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

pytest.importorskip("nats_bench.api_utils")
pytest.importorskip("nas_201_api.api_utils")

import nb201_table as T  # noqa: E402
from nb201_table import nb201_table  # noqa: F401,E402 (fixture)
from nader.cli import main  # noqa: E402
from nader.search.checks import Checker  # noqa: E402
from nader.search.session import run_search  # noqa: E402
from nader.search.spaces import nb201 as S  # noqa: E402
from nader.search.spaces.space import NB201Space, mutate_cell  # noqa: E402
from nader.search.tree import Tree  # noqa: E402
from search_helpers import EXAMPLE, ROOT_TEXT  # noqa: E402
from search_helpers import run_records as _records  # noqa: E402


@pytest.fixture
def table(nb201_table):
    return nb201_table


def _settings(run, table, **extra):
    return {"space": "nb201", "dataset": "cifar10", "evaluator": f"nats-bench:{table}", "preset": "nb201-12",
            "seeds": [777], "run_dir": str(run), **extra}




def _check_answers(recs):
    for r in recs:
        if r["status"] != "ok":
            continue
        cell = S.cell_of_text(r["text"])
        assert r["valid_acc"] == pytest.approx(T.valid_accuracy(cell))
        assert r["test_acc"] == pytest.approx(T.test_accuracy(cell))
        assert r["seconds"] == pytest.approx(T.simulated_seconds(cell))
        assert r["widths"] == list(S.WIDTHS)


@pytest.mark.parametrize("strategy,options", [("walk", {}), ("rea", {"population": 4, "sample_size": 2})])
def test_search_over_the_space_with_the_table_completes_and_resumes(tmp_path, table, strategy, options):
    run = tmp_path / "run"
    first = run_search(_settings(run, table, strategy=strategy, strategy_options=options, trials=8))
    assert first.stop.code == "trials" and first.trials == 8 and not first.resumed
    before = _records(run)
    assert before[0]["origin"] == "root" and S.cell_of_text(before[0]["text"]) == S.CellStructure.parse(S.RESNET)
    second = run_search(_settings(run, table, strategy=strategy, strategy_options=options, trials=14))
    assert second.stop.code == "trials" and second.trials == 14 and second.resumed
    after = _records(run)
    assert [(r["arch_id"], r["text"], r["valid_acc"]) for r in after[:len(before)]] == \
        [(r["arch_id"], r["text"], r["valid_acc"]) for r in before]
    _check_answers(after)
    by_id = {r["arch_id"]: r for r in after}
    for r in after[1:]:
        if r["operator"] == "nb201-uniform":  # REA's first population: uniform draws under the root
            assert strategy == "rea" and r["parent_id"] == 0 and r["arch_id"] <= options["population"]
            continue
        assert r["operator"] == "nb201-edge"
        if r["text"] is None:
            continue
        cell, parent = S.cell_of_text(r["text"]), S.cell_of_text(by_id[r["parent_id"]]["text"])
        assert sum(a != b for a, b in zip(cell.ops, parent.ops)) == 1, (str(parent), str(cell))
        assert r["change"]["cell"] == str(cell)
    best = max((r for r in after if r["status"] == "ok"), key=lambda r: r["valid_acc"])
    assert second.best["valid_acc"] == best["valid_acc"]
    # walk trains its root; rea in the cell space starts without one (--root none by default)
    assert by_id[0]["status"] == ("ok" if strategy == "walk" else "untrained")
    if strategy == "walk":
        assert best["valid_acc"] >= by_id[0]["valid_acc"]


def test_rea_finds_better_cells_than_the_root(tmp_path, table):
    """The table rewards convolutions: REA's best beats the ResNet cell it starts from."""
    s = run_search(_settings(tmp_path / "run", table, strategy="rea", trials=30,
                             strategy_options={"population": 6, "sample_size": 3}))
    assert s.best["valid_acc"] > T.valid_accuracy(S.RESNET) + 5


def test_the_evaluator_refuses_architectures_outside_the_space_and_the_search_goes_on(tmp_path, table):
    run = tmp_path / "run"
    s = run_search({"root": str(EXAMPLE), "dataset": "cifar10", "evaluator": f"nats-bench:{table}",
                    "preset": "nb201-12", "seeds": [777], "strategy": "walk", "trials": 3, "run_dir": str(run)})
    assert s.stop.code == "trials" and s.best is None
    recs = _records(run)
    failed = [r for r in recs if r["status"] == "failed"]
    assert len(failed) == 3
    for r in failed:
        (seed,) = r["seeds"]
        assert seed["error_kind"] == "not-in-space"
        assert "answers only NAS-Bench-201 cells" in seed["error"]


def test_the_space_refuses_blocks_outside_it():
    space = NB201Space()
    assert space.refuse(S.architecture(S.RESNET)) is None
    assert "not a cell of the NAS-Bench-201 space" in space.refuse(ROOT_TEXT)
    # the right cell on another stem is outside the space too
    other_stem = S.architecture(S.RESNET).replace("kernel_size=3,bias=0)\n3:BN\n0->2", "kernel_size=5,bias=0)\n3:BN\n0->2")
    assert other_stem != S.architecture(S.RESNET)
    assert "stem block differs" in space.refuse(other_stem)
    checker = Checker(S.SKELETON, "cifar10", S.DEPTHS, None, space=space)
    checked = checker.check(ROOT_TEXT, Tree())
    assert checked.status == "invalid" and checked.diagnostics["diagnostics"][0]["code"] == "not-in-space"
    ok = checker.check(S.architecture(S.RESNET), Tree())
    assert ok.status == "proposed" and ok.widths == [16, 32, 64] and ok.binding == "fixed"
    assert ok.params == S.build(S.RESNET)[1]["params"]


def test_a_mutation_changes_exactly_one_edge_to_another_operation():
    import random

    rng = random.Random(3)
    cell = S.CellStructure.parse(S.RESNET)
    seen = set()
    for _ in range(200):
        new, change = mutate_cell(cell, rng)
        diff = [i for i in range(6) if new.ops[i] != cell.ops[i]]
        assert len(diff) == 1 and change["to"] == new.ops[diff[0]] != change["from"] == cell.ops[diff[0]]
        seen.add(new)
    assert len(seen) == 6 * 4  # every neighbour is reachable


def test_the_report_plots_best_so_far_against_simulated_time(tmp_path, table):
    from nader.search.report.load import load_run
    from nader.search.report.render import _best_so_far, render_report, simulated_time

    run = tmp_path / "run"
    run_search(_settings(run, table, strategy="random", trials=5))
    meta, archs = load_run(run)
    assert simulated_time(meta)
    points = _best_so_far(archs, meta.started, simulated=True)
    cells = [S.cell_of_text(r["text"]) for r in _records(run) if r["status"] == "ok"]
    assert len(points) == len(cells) == 5
    assert points[-1]["seconds"] == pytest.approx(sum(T.simulated_seconds(c) for c in cells))
    assert [p["seconds"] for p in points] == sorted(p["seconds"] for p in points)
    assert "simulated training time" in render_report(meta, archs)


def test_cli_flags_and_toml_with_a_nas_bench_201_file(tmp_path):
    """`--space nb201 --evaluator nas-bench-201:PATH` on the command line, and the same from a TOML
    file whose path is relative to it; a table holding the root's neighbours only: cells outside
    it fail with the table's reason and the search goes on."""
    root = S.CellStructure.parse(S.RESNET)
    cells = [root] + [S.CellStructure(root.ops[:i] + (op,) + root.ops[i + 1:]) for i in range(6) for op in S.OPS
                      if op != root.ops[i]]
    path = T.write_table("nas-bench-201", tmp_path, cells)
    runner = CliRunner()
    r = runner.invoke(main, ["run", "--space", "nb201", "--evaluator", f"nas-bench-201:{path}", "--dataset", "cifar10",
                             "--preset", "nb201-12", "--seeds", "777", "--strategy", "random", "--trials", "6",
                             "--root", "train", "--run-dir", str(tmp_path / "run"), "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "trials" and out["trials"] == 6
    recs = _records(tmp_path / "run")
    _check_answers(recs)
    for rec in recs:
        if rec["status"] == "failed":
            assert rec["seeds"][0]["error_kind"] == "missing-entry"
    toml = tmp_path / "search.toml"
    toml.write_text(f'space = "nb201"\nevaluator = "nas-bench-201:{path.name}"\ndataset = "cifar10"\n'
                    f'preset = "nb201-12"\nseeds = [777]\nstrategy = "rea"\ntrials = 3\n'
                    f'root = "train"\nrun-dir = "toml-run"\n')
    r = runner.invoke(main, ["run", str(toml), "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["trials"] == 3 and out["run_dir"] == str(tmp_path / "toml-run")  # relative to the file
    recs = _records(tmp_path / "toml-run")
    _check_answers(recs)
    assert out["best"]["valid_acc"] == max(T.valid_accuracy(S.cell_of_text(r["text"])) for r in recs
                                           if r["status"] == "ok")


@pytest.mark.parametrize("args,message", [
    (["--evaluator", "nats-bench:/nonexistent/table.pbz2", "--dataset", "cifar10"], "no benchmark file"),
    (["--evaluator", "nats-bench:x.pbz2"], "--evaluator nats-bench: the nats-bench benchmark has no digits results"),
    (["--evaluator", "nasbench101:x"], "expected training, nats-bench:PATH, nas-bench-201:PATH or table:PATH"),
    (["--skeleton", "darts"], "runs on the nas-bench-201 skeleton"),
])
def test_cli_errors_are_one_line(tmp_path, args, message):
    r = CliRunner().invoke(main, ["run", "--space", "nb201", *args, "--run-dir", str(tmp_path / "run")],
                           catch_exceptions=False)
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


def test_cells_train_on_nas_bench_201s_network_without_a_table(tmp_path):
    """The training evaluator runs the space's cells on the nas-bench-201 skeleton at NB201's widths
    (digits, one block per stage, one epoch: small)."""
    from nader.compiler.network import build_network

    s = run_search({"space": "nb201", "dataset": "digits", "preset": "quick", "epochs": 1, "depths": [1, 1, 1],
                    "train_options": {"train_limit": 256, "eval_limit": 128}, "threads": 1, "trials": 2,
                    "strategy": "random", "run_dir": str(tmp_path / "run")})
    assert s.stop.code == "trials" and s.counts == {"ok": 2, "untrained": 1}
    for r in _records(tmp_path / "run"):
        S.cell_of_text(r["text"])
        assert r["widths"] == [16, 32, 64] and (r["seeds"][0]["job_id"] if r["status"] == "ok" else not r["seeds"])
        _, info = build_network(r["text"], S.SKELETON, "digits", widths=[16, 32, 64], depths=[1, 1, 1])
        assert r["params"] == info["params"]
