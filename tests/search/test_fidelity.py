"""Multi-fidelity promotion (`--fidelity successive-halving|hyperband`): rung sizes and
promotions follow eta, the promoted are the best at the lower rung, each rung is answered at its
budget, an interrupted search resumes into the same schedule, the best is chosen at the highest
rung, the report shows the promotions, and training runs each rung at its epochs.

The tabular searches answer from the generated NB201 table's numbers (`nb201_table`'s
formulas) at any epoch, with a jitter per (cell, epoch) so that rungs rank differently."""
from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter

import pytest
from click.testing import CliRunner

import nb201_table as T
from nader.cli import main
from nader.runtime.errors import ConfigError
from nader.search import records
from nader.search.config_file import read_toml
from nader.search.tables.lookup import TableEvaluator
from nader.search.tables.base import TableError, TableRecord
from nader.search.fidelity import ladder
from nader.search.pruners import HyperbandPruner, SuccessiveHalvingPruner
from nader.search.report.compare import curve_of
from nader.search.report.load import load_run
from nader.search.report.render import promotions, render_report
from nader.search.session import run_search
from nader.search.spaces import nb201 as S
from search_helpers import EXAMPLE
from search_helpers import run_records as _records

FAST = ["--dataset", "digits", "--depths", "1,1,1", "--threads", "1"]


class Table:
    """What the loop's table evaluator reads: valid/test accuracy of a cell at an epoch budget."""

    def __init__(self, early: float = 0.0):
        self.asked = []  # (cell, epochs) in order
        self.early = early  # points added per epoch short of 12: brief training reads higher

    def cell(self, arch):
        try:
            return S.CellStructure.parse(arch) if arch.startswith("|") else S.cell_of_text(arch)
        except S.NotInSpace as exc:
            raise TableError(str(exc)) from None

    def test_schedules(self, dataset):
        return set()  # no 200-epoch schedule: each rung reports its own test accuracy

    def evaluate(self, arch, dataset, epochs, seed=None, test_epochs=None):
        cell = self.cell(arch)
        self.asked.append((str(cell), epochs))
        jitter = (int(hashlib.sha256(f"{cell}/{epochs}".encode()).hexdigest()[:4], 16) / 65536 - 0.5) * 6
        valid = T.valid_accuracy(cell, epochs - 1) + jitter + self.early * (12 - epochs)
        return TableRecord(arch=str(cell), dataset=dataset, epochs=epochs, seed=seed, valid_acc=valid,
                           test_acc=valid - 1, seconds=epochs * T.epoch_seconds(cell), params=1, flops=1)


class Interrupting(TableEvaluator):
    """Ctrl-C at the n-th wait for results (None: never; `waits` counts them)."""

    def __init__(self, table, n=None):
        super().__init__(table, "cifar10", 12)
        self.n, self.waits = n, 0

    def wait(self, timeout=None):
        self.waits += 1
        if self.waits == self.n:
            raise KeyboardInterrupt
        return super().wait(timeout)


def _search(run, table=None, evaluator=None, **extra):
    settings = {"space": "nb201", "dataset": "cifar10", "preset": "nb201-12", "seeds": [777], "run_dir": str(run),
                "strategy": "random", "fidelity": "successive-halving", "eta": 3, "min_epochs": 1, **extra}
    return run_search(settings, evaluator=evaluator or TableEvaluator(table or Table(), "cifar10", 12))


def _rows(run, sql):
    conn = sqlite3.connect(run / "runs.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()




def _state(run):
    """Everything a schedule decides, without timestamps."""
    recs = [(r["arch_id"], r["text"], r["status"], r["valid_acc"], r["test_acc"], r["seconds"],
             json.dumps(r.get("rungs"))) for r in _records(run)]
    return recs, _rows(run, "SELECT * FROM fidelity_brackets ORDER BY bracket")


def _rungs(run):
    """bracket -> rung -> [(arch_id, valid at that rung, promoted)]"""
    bracket_of = dict(_rows(run, "SELECT arch_id, bracket FROM arch_rungs"))
    out = {}
    for rec in _records(run):
        for r in rec.get("rungs", []):
            out.setdefault(bracket_of[rec["arch_id"]], {}).setdefault(r["rung"], []).append(
                (rec["arch_id"], r["valid_acc"], r["promoted"]))
    return out


def test_the_ladder_grows_by_eta_up_to_the_full_budget():
    assert ladder(200, 12, 3) == [12, 36, 108, 200]
    assert ladder(12, None, 3) == [2, 6, 12]  # ceil(12 / 9)
    assert ladder(12, 1, 3) == [1, 3, 9, 12]
    assert ladder(2, 1, 2) == [1, 2]
    assert ladder(12, 12, 3) == [12]
    with pytest.raises(ConfigError, match="min-epochs"):
        ladder(12, 13, 3)
    with pytest.raises(ConfigError, match="eta"):
        ladder(12, 1, 1)
    hb = HyperbandPruner(min_resource=1, max_resource=12, reduction_factor=3)
    assert hb.budgets == (1, 3, 9, 12)
    assert [hb.shape(b) for b in range(5)] == [(0, 27), (1, 12), (2, 6), (3, 4), (0, 27)]
    assert SuccessiveHalvingPruner(min_resource=3, reduction_factor=2, max_resource=12).shape(7) == (0, 4)


@pytest.mark.parametrize("strategy", ["random", "rea"])
def test_rungs_follow_eta_and_promote_the_best_of_the_lower_rung(tmp_path, strategy):
    table = Table()
    options = {"population": 6, "sample_size": 3} if strategy == "rea" else {}
    s = _search(tmp_path / "run", table, trials=30, strategy=strategy, strategy_options=options)
    assert s.stop.code == "trials" and s.trials == 30
    brackets = _rows(tmp_path / "run", "SELECT bracket, first_rung, size FROM fidelity_brackets ORDER BY bracket")
    assert brackets == [(0, 0, 27), (1, 0, 3)]  # the second closed at the trial count with 3
    budgets = [1, 3, 9, 12]
    rungs = _rungs(tmp_path / "run")
    assert [len(rungs[0][r]) for r in range(4)] == [27, 9, 3, 1]
    assert [len(rungs[1][r]) for r in range(4)] == [3, 1, 1, 1]
    recs = {r["arch_id"]: r for r in _records(tmp_path / "run")}
    for bracket in rungs.values():
        for rung in range(3):
            members, up = bracket[rung], {a for a, _, _ in bracket[rung + 1]}
            by_acc = sorted(members, key=lambda m: (-m[1], m[0]))
            assert {a for a, _, _ in by_acc[:len(up)]} == up
            assert {a for a, _, p in members if p} == up
            for arch_id, valid, _ in members:  # the rung's own answer, at its budget
                cell = S.cell_of_text(recs[arch_id]["text"])
                assert valid == pytest.approx(Table().evaluate(str(cell), "cifar10", budgets[rung]).valid_acc)
    # the table was asked for each rung's members at that rung's budget, once each
    asked = Counter(table.asked)
    expected = Counter((str(S.cell_of_text(recs[a]["text"])), budgets[r])
                       for b in rungs.values() for r, members in b.items() for a, _, _ in members)
    assert asked == expected
    # seconds add up over the rungs an architecture trained at
    top = rungs[0][3][0][0]
    cell = S.cell_of_text(recs[top]["text"])
    assert recs[top]["seconds"] == pytest.approx(sum(budgets) * T.epoch_seconds(cell))


def test_hyperband_brackets_start_at_their_rungs(tmp_path):
    table = Table()
    _search(tmp_path / "run", table, trials=10, fidelity="hyperband", eta=2, min_epochs=3)
    brackets = _rows(tmp_path / "run", "SELECT bracket, first_rung, size FROM fidelity_brackets ORDER BY bracket")
    assert brackets == [(0, 0, 4), (1, 1, 3), (2, 2, 3)]  # budgets 3, 6, 12
    rungs = _rungs(tmp_path / "run")
    assert {b: {r: len(m) for r, m in v.items()} for b, v in rungs.items()} == \
        {0: {0: 4, 1: 2, 2: 1}, 1: {1: 3, 2: 1}, 2: {2: 3}}
    assert Counter(e for _, e in table.asked) == Counter({3: 4, 6: 2 + 3, 12: 1 + 1 + 3})


@pytest.mark.parametrize("strategy,when", [("rea", 0.1), ("rea", 0.5), ("rea", 0.75), ("rea", 0.9),
                                           ("random", 0.8)])
def test_an_interrupted_search_resumes_into_the_same_schedule(tmp_path, strategy, when):
    options = {"population": 20, "sample_size": 2} if strategy == "rea" else {}
    counting = Interrupting(Table())
    _search(tmp_path / "whole", evaluator=counting, trials=30, strategy=strategy, strategy_options=options)
    with pytest.raises(KeyboardInterrupt):
        _search(tmp_path / "parts", evaluator=Interrupting(Table(), max(1, int(counting.waits * when))), trials=30,
                strategy=strategy, strategy_options=options)
    assert _state(tmp_path / "parts") != _state(tmp_path / "whole")
    s = _search(tmp_path / "parts", trials=30, strategy=strategy, strategy_options=options)
    assert s.resumed and s.stop.code == "trials"
    assert _state(tmp_path / "parts") == _state(tmp_path / "whole")


def test_the_best_is_chosen_at_the_highest_rung_and_the_report_shows_promotions(tmp_path):
    run = tmp_path / "run"
    s = _search(run, Table(early=1.0), trials=30)
    recs = _records(run)
    ok = [r for r in recs if r["status"] == "ok"]
    top = max(r["rungs"][-1]["rung"] for r in ok)
    assert top == 3
    brief = max((r for r in ok if r["rungs"][-1]["rung"] < top), key=lambda r: r["valid_acc"])
    full = max((r for r in ok if r["rungs"][-1]["rung"] == top), key=lambda r: r["valid_acc"])
    assert brief["valid_acc"] > full["valid_acc"]  # the rule matters here
    assert s.best["arch_id"] == full["arch_id"]
    r = CliRunner().invoke(main, ["best", str(run), "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["arch_id"] == full["arch_id"]
    r = CliRunner().invoke(main, ["status", str(run)])
    line = next(x for x in r.stdout.splitlines() if x.lstrip().startswith(f"#{full['arch_id']} "))
    assert "rungs (^ promoted)" in r.stdout and line.count(" ^") == 3 and line.rstrip().endswith(
        f"{full['valid_acc']:.2f}@12ep")

    run_info, archs = load_run(run)
    table = promotions(archs)
    assert table["epochs"] == [1, 3, 9, 12]
    assert table["rows"][0]["id"] == str(full["arch_id"])  # ranked by rung, then accuracy
    first = table["rows"][0]["cells"]
    assert [c["promoted"] for c in first] == [True, True, True, False]
    html = render_report(run_info, archs)
    row = html.split(f'id="rungs-{full["arch_id"]}"')[1].split("</tr>")[0]
    assert row.count('title="promoted"') == 3 and f"{full['valid_acc']:.2f}%" in row
    assert f"{full['rungs'][0]['valid_acc']:.2f}%" in row
    assert 'id="promotions"' in html and "12 epochs (rung 3)" in html
    curve = curve_of(run_info, archs)  # `nader-search report RUN1 RUN2` and benchmarks/strategies.py
    assert curve.strategy == "random+sh" and curve.valid[-1] == full["valid_acc"]


def test_without_fidelity_nothing_changes(tmp_path):
    run = tmp_path / "run"
    run_search({"space": "nb201", "dataset": "cifar10", "preset": "nb201-12", "seeds": [777], "run_dir": str(run),
                "strategy": "random", "trials": 4}, evaluator=TableEvaluator(Table(), "cifar10", 12))
    assert _rows(run, "SELECT COUNT(*) FROM arch_rungs") == [(0,)]
    assert all("rungs" not in r for r in _records(run))
    assert 'id="promotions"' not in render_report(*load_run(run))


def test_training_runs_each_rung_at_its_epochs(tmp_path):
    run = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "--from", str(EXAMPLE), *FAST, "--trials", "2", "--strategy", "walk",
                                  "--fidelity", "successive-halving", "--eta", "2", "--min-epochs", "1",
                                  "--epochs", "2", "--run-dir", str(run), "--format", "json"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    rungs = _rows(run, "SELECT arch_id, rung, epochs, promoted, valid_acc, seeds FROM arch_rungs "
                       "ORDER BY rung, arch_id")
    assert [(a, rung, e) for a, rung, e, *_ in rungs] == [(0, 0, 1), (1, 0, 1), (rungs[2][0], 1, 2)]
    up = rungs[2][0]  # two at 1 epoch, the better one again at 2
    recs = {r["arch_id"]: r for r in _records(run)}
    lower = {a: recs[a]["rungs"][0]["valid_acc"] for a in (0, 1)}
    assert up == max((0, 1), key=lambda a: (lower[a], -a))
    assert [row[3] for row in rungs[:2]] == [int(a == up) for a in (0, 1)]
    assert [s["epochs"] for s in json.loads(rungs[up][5])] == [1]  # the lower rung's seeds, kept
    assert _rows(run, f"SELECT epochs FROM arch_seeds WHERE arch_id={up}") == [(2,)]
    specs = [json.loads(spec) for (spec,) in _rows(run, "SELECT spec FROM jobs")]
    assert sorted(spec["options"]["epochs"] for spec in specs) == [1, 1, 2]
    assert json.loads(r.stdout)["best"]["arch_id"] == up


def test_fidelity_settings_are_checked_and_part_of_the_identity(tmp_path):
    r = CliRunner().invoke(main, ["run", "--from", str(EXAMPLE), *FAST, "--fidelity", "hyperband",
                                  "--min-epochs", "9", "--run-dir", str(tmp_path / "x")])
    assert r.exit_code == 2 and "min-epochs must be between 1 and the full budget (3 epochs)" in r.output
    run = tmp_path / "run"
    _search(run, trials=3)
    with pytest.raises(ConfigError, match="fidelity"):
        _search(run, trials=3, eta=2)
    toml = tmp_path / "search.toml"
    toml.write_text('fidelity = "hyperband"\neta = 2\nmin_epochs = 4\n')
    assert read_toml(toml) == {"fidelity": "hyperband", "eta": 2, "min_epochs": 4}


def test_a_table_without_a_rungs_epochs_is_refused_at_the_start_and_leaves_no_run(tmp_path):
    import derived_tables

    table = derived_tables.write(tmp_path / "t.csv", cells=list(S.all_cells())[:300])  # valid_acc@12 only
    run = tmp_path / "run"
    base = ["run", "--space", "nb201", "--strategy", "rea", "--evaluator", f"table:{table}", "--dataset", "cifar10",
            "--preset", "nb201", "--seeds", "777", "--trials", "4", "--run-dir", str(run), "--fidelity",
            "successive-halving"]
    refused = CliRunner().invoke(main, base)
    assert refused.exit_code == 2
    assert "needs validation accuracy at 23, 69, 200 epochs; the table has none at 23, 69, 200 (it has 12)" \
        in refused.output
    assert not (run / "runs.sqlite").exists()
    # The same directory takes the corrected settings: nothing of the refused start is held against them.
    fixed = CliRunner().invoke(main, [*base[:base.index("--preset")], "--preset", "nb201-12", *base[base.index("--seeds"):],
                                      "--min-epochs", "12"])
    assert "needs validation accuracy" not in fixed.output  # 12 epochs is the full budget: one rung, held
    assert "other settings" not in fixed.output
    assert (run / "runs.sqlite").exists()
