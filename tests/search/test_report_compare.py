"""`nader-search report RUN1 RUN2 ...`: best-found accuracy against trials of several runs on one
page (search/report/compare.py). The runs are real searches answered by a table (no training)."""
from __future__ import annotations

import re
import sqlite3

import pytest
from click.testing import CliRunner

from nader.cli import main as cli
from nader.search import run_search
from nader.search.report.compare import Curve, curve_of, table_rows, text_table
from nader.search.report.model import ReportArch, Run
from search_helpers import TableEvaluator, settings


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("compare")
    out = []
    for strategy, seed in (("walk", 0), ("walk", 1), ("rea", 0)):
        run = base / f"{strategy}-seed{seed}<b>"  # a name the page must escape
        options = {"population": 3, "sample_size": 2} if strategy == "rea" else {}
        run_search(settings(run, strategy=strategy, strategy_options=options, trials=7, seed=seed),
                   evaluator=TableEvaluator())
        out.append(run)
    return out


def _best_so_far(run) -> list:
    """From the database: after each finished trial, the best validation accuracy so far."""
    conn = sqlite3.connect(run / "runs.sqlite")
    rows = conn.execute("SELECT status, valid_acc FROM archs WHERE status IN ('ok', 'diverged', 'failed') "
                        "ORDER BY finished, arch_id").fetchall()
    conn.close()
    best, out = None, []
    for status, acc in rows:
        if status == "ok" and (best is None or acc > best):
            best = acc
        out.append(best)
    return out


def test_report_of_several_runs_overlays_their_curves(runs, tmp_path):
    out = tmp_path / "cmp.html"
    result = CliRunner().invoke(cli, ["report", *map(str, runs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 runs compared" in result.output
    html = out.read_text(encoding="utf-8")
    assert "<script" not in html and "seed0&lt;b&gt;" in html and "seed0<b>" not in html
    # One thin line per run and one thick mean line per strategy.
    assert len(re.findall(r"<polyline", html)) == 3 + 2
    assert "walk (2 runs)" in html and "rea (1 run)" in html
    # The table's last row per strategy is the mean of the runs' final best accuracies.
    finals = {r.name: _best_so_far(r)[-1] for r in runs}
    walk_mean = (finals[runs[0].name] + finals[runs[1].name]) / 2
    assert f"{walk_mean:.2f} ±" in html


def test_curves_count_failed_trials_and_keep_the_best_one(runs):
    run = Run(name="r", strategy="s")
    archs = [ReportArch("0", None, "ok", valid_acc=50.0, test_acc=49.0, finished=1.0),
             ReportArch("1", "0", "failed", finished=2.0),
             ReportArch("2", "0", "ok", valid_acc=60.0, test_acc=55.0, finished=4.0),
             ReportArch("3", "2", "ok", valid_acc=58.0, test_acc=59.0, finished=3.0),
             ReportArch("4", "2", "invalid")]
    c = curve_of(run, archs)
    assert c.valid == [50.0, 50.0, 58.0, 60.0] and c.test == [49.0, 49.0, 59.0, 55.0]
    from nader.search.report.load import load_run

    loaded = [curve_of(*load_run(r)) for r in runs]
    assert [x.valid for x in loaded] == [_best_so_far(r) for r in runs]


def test_table_gives_mean_and_spread_per_strategy():
    curves = [Curve("a", "x", [50.0, 60.0], [48.0, 58.0]), Curve("b", "x", [40.0, 70.0], [41.0, 66.0]),
              Curve("c", "y", [55.0], [54.0])]
    rows = {(r["strategy"], r["trial"]): r for r in table_rows(curves, [1, 2])}
    assert rows[("x", 2)]["valid"] == 65.0 and rows[("x", 2)]["valid_sd"] == pytest.approx(7.0711, abs=1e-4)
    assert rows[("x", 2)]["test"] == 62.0
    assert rows[("y", 2)]["valid"] == 55.0 and rows[("y", 2)]["valid_sd"] == 0.0  # a shorter run keeps its last
    text = text_table(curves, [1, 2])
    assert "65.00 ± 7.07" in text and "62.00 ± 5.66" in text


def test_watch_takes_one_run(runs, tmp_path):
    result = CliRunner().invoke(cli, ["report", str(runs[0]), str(runs[1]), "--watch", "-o", str(tmp_path / "x.html")])
    assert result.exit_code == 2 and "--watch takes one RUN" in result.output
