"""The smaller things a Python-API user met reading a study (issue 38, "Why" 5): `best --pareto` prints
an objective by its magnitude, `run --help` names every strategy that starts without a root, and
the report of a study a Python objective evaluates speaks of wall time and no preset. (The arch of a
trial read back, pandas and the exported preprocessing: tests/search/test_any_trial_export.py.)"""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import nader.search as ns
from nader.cli import main
from nader.search.records import objective_text, pareto_table
from nader.search.report.load import load_run
from nader.search.report.render import render_report
from nader.search.strategies import STRATEGIES, get_strategy


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def millions(tmp_path_factory):
    """A two-objective cell-space study whose objective returns params in millions."""
    pytest.importorskip("pymoo")
    run = tmp_path_factory.mktemp("millions") / "run"
    study = ns.create_study(space="nb201", dataset="cifar10", objectives=["valid_acc:max", "params:min"],
                            storage=str(run), strategy="random")
    study.optimize(lambda arch: (50.0 + arch.cell.count("conv"), arch.params / 1e6), n_trials=6)
    return run, study


def test_best_pareto_prints_an_objective_by_its_magnitude(millions):
    run, study = millions
    r = invoke("best", run, "--pareto")
    assert r.exit_code == 0, r.output
    head, *rows = r.stdout.strip().splitlines()
    column = head.split().index("params")
    front = {t.number: t for t in study.best_trials}
    assert rows and len(rows) == len(front)
    for row in rows:
        cells = row.split()
        t = front[int(cells[0].lstrip("#"))]
        assert 0 < t.values[1] < 1.5 and cells[column] == objective_text(t.values[1]) != "0"
        assert float(cells[column]) == pytest.approx(t.values[1], rel=1e-3)


def test_objective_text_formats_counts_and_fractions_apart():
    assert [objective_text(v) for v in (615386, 0.615386, 97.2222, 12623600.0, 2e-05, None)] == \
        ["615.39K", "0.6154", "97.22", "12.62M", "2e-05", "-"]
    rec = {"arch_id": 3, "status": "ok", "valid_acc": 97.22, "params": 615386, "flops": 1200, "test_acc": None,
           "objectives": {"params": 0.615386}}
    assert pareto_table([rec], ["valid_acc:max", "params:min"]).splitlines()[1].split() == \
        ["#3", "97.22", "0.6154", "1.20K", "-"]


def test_run_help_names_every_strategy_that_starts_without_a_root():
    text = " ".join(invoke("run", "--help").stdout.split())
    found = re.search(r"\[default: none for ([^]]*?) in --space nb201", text)
    assert found, "run --help states --root's default"
    named = set(re.split(r", and |, | and ", found.group(1)))
    rootless = {name for name in STRATEGIES if getattr(get_strategy(name), "rootless", False)}
    assert named == rootless and "optuna" in named


def test_the_report_of_a_python_objective_study_says_wall_time_and_no_preset(millions):
    run, _ = millions
    page = render_report(*load_run(run))
    assert "simulated training time" not in page and "by wall time (s)" in page
    preset = re.search(r"<th>preset</th><td>(.*?)</td>", page).group(1)
    assert "a Python objective evaluates the trials" in preset and "quick" not in preset
