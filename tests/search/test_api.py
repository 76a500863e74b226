"""The Python API (docs/api.md): every example on the page runs, the public-name tables match
each package's `__all__`, and a study is one run directory that the CLI and `load_study` share."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import derived_tables as D
import nader.compiler
import nader.dsl
import nader.search as ns
from nader.cli import main
from nader.runtime.errors import ConfigError
from nader.search import registry
from nader.search.spaces import nb201
from nader.search.strategies import STRATEGIES, get_strategy
from search_helpers import EXAMPLE

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "api.md"


@pytest.fixture(autouse=True)
def _registrations():
    """What a test registers is gone after it: other tests list the strategies."""
    strategies, evaluators, loaded = dict(STRATEGIES), dict(registry.EVALUATORS), set(registry._loaded)
    yield
    STRATEGIES.clear()
    STRATEGIES.update(strategies)
    registry.EVALUATORS.clear()
    registry.EVALUATORS.update(evaluators)
    registry._loaded.clear()
    registry._loaded.update(loaded)


def _blocks(kind: str):
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_every_python_example_of_the_api_page_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, tmp_path / "resnet.nad")
    blocks = _blocks("python")
    assert len(blocks) >= 5
    scope: dict = {"__name__": "api_doc"}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the suite's trials train: a shared machine is not oversubscribed
    try:
        for i, code in enumerate(blocks):
            exec(compile(code, f"docs/api.md block {i + 1}", "exec"), scope)  # noqa: S102 - our own page
    finally:
        torch.set_num_threads(threads)
    # The first block's search was resumed: 4 trials then 2 more, in one run directory.
    study = ns.load_study(tmp_path / "runs" / "api-demo")
    assert [t.number for t in study.trials] == list(range(6))
    assert {s["command"] for s in _sessions(tmp_path / "runs" / "api-demo")} == {"nader.search.Study.optimize"}
    assert len(_sessions(tmp_path / "runs" / "api-demo")) == 2


def test_the_api_page_script_with_a_user_objective_is_about_twenty_lines():
    first = _blocks("python")[0]
    lines = [line for line in first.splitlines() if line.strip()]
    assert len(lines) <= 24 and "def objective" in first and "best_trials" in first and "load_study" in first


@pytest.mark.parametrize("package", [ns, nader.compiler, nader.dsl], ids=lambda m: m.__name__)
def test_the_public_names_table_is_the_package_all(package):
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(f"### {package.__name__}\n", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^\| `([A-Za-z_][A-Za-z_0-9]*)` \|", section, re.M)
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(package.__all__)
    for name in package.__all__:
        assert getattr(package, name) is not None


def _sessions(run_dir):
    conn = sqlite3.connect(str(Path(run_dir) / "runs.sqlite"))
    try:
        return [{"command": c} for (c,) in conn.execute("SELECT command FROM search_sessions")]
    finally:
        conn.close()


def _cell_objective(arch):
    return 50.0 + 5 * arch.cell.count("conv_3x3") - arch.cell.count("skip"), float(arch.cell.count("conv"))


def test_a_python_study_opens_with_the_cli_status_best_and_report(tmp_path):
    run = tmp_path / "study"
    study = ns.create_study(space="nb201", dataset="cifar10", objectives=["valid_acc:max", "convs:min"],
                            storage=str(run), strategy="rea", options={"population": 3, "sample_size": 2})
    summary = study.optimize(_cell_objective, n_trials=8)
    assert summary.trials == 8
    runner = CliRunner()
    status = runner.invoke(main, ["status", str(run), "--format", "json"])
    assert status.exit_code == 0, status.output
    best = runner.invoke(main, ["best", str(run), "--pareto", "--format", "json"])
    assert best.exit_code == 0, best.output
    front = json.loads(best.output)
    assert sorted(r["arch_id"] for r in front) == sorted(t.number for t in study.best_trials)
    rows = list(csv.DictReader(io.StringIO(runner.invoke(main, ["export", str(run)]).stdout)))
    assert rows[0]["status"] == "untrained"  # rea in the cell space starts without a root trial (--root none)
    rows = rows[1:]
    assert [json.loads(r["objectives"])["convs"] for r in rows] == [t.values[1] for t in study.trials]
    report = runner.invoke(main, ["report", str(run), "-o", str(tmp_path / "report.html")])
    assert report.exit_code == 0, report.output
    # `run` has no function to call: it refuses with one line that says how to resume.
    again = runner.invoke(main, ["run", "--run-dir", str(run), "--trials", "9"])
    assert again.exit_code == 2 and "load_study" in again.output


def test_load_study_opens_a_cli_run_and_continues_it_with_a_python_objective(tmp_path):
    run = tmp_path / "cli"
    result = CliRunner().invoke(main, ["run", "--from", str(EXAMPLE), "--dataset", "digits", "--preset", "quick",
                                       "--depths", "1,1,1", "--epochs", "1", "--threads", "1", "--strategy", "walk",
                                       "--trials", "2", "--run-dir", str(run)])
    assert result.exit_code == 0, result.output
    study = ns.load_study(run)
    before = study.trials
    assert [t.state for t in before] == ["ok", "ok"] and all(t.values for t in before)
    study.optimize(lambda arch: 1.0, n_trials=1)
    after = study.trials
    assert len(after) == 3 and after[2].values == [1.0] and after[:2][0].values == before[0].values


def test_ask_and_tell_drive_the_same_loop_and_an_untold_trial_is_asked_again(tmp_path):
    run = tmp_path / "at"
    study = ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"], storage=str(run),
                            strategy="random")
    first = study.ask()
    assert first.number == 1 and first.arch.cell is not None  # node 0 is the untrained root (--root none)
    study.tell(first, 10.0)
    second = study.ask()
    study.close()  # asked, never told
    study = ns.load_study(run)
    again = study.ask()
    assert again.number == second.number and again.text == second.text
    study.tell(again, state="fail")
    third = study.ask()
    study.tell(third, 30.0)
    study.close()
    states = {t.number: (t.state, t.value) for t in ns.load_study(run).trials}
    assert states[first.number] == ("ok", 10.0) and states[second.number][0] == "failed" and states[third.number] == ("ok", 30.0)


def test_an_objective_that_raises_fails_its_trial_with_the_message_and_the_search_goes_on(tmp_path):
    def objective(arch):
        if arch.number == 2:  # the second trial: node 0 is the untrained root (--root none)
            raise RuntimeError("my loader broke")
        return 1.0

    study = ns.create_study(space="nb201", dataset="cifar10", storage=str(tmp_path / "r"), strategy="random")
    study.optimize(objective, n_trials=3)
    trials = study.trials
    assert [t.state for t in trials] == ["ok", "failed", "ok"]
    assert "RuntimeError: my loader broke" in json.dumps(trials[1].record["seeds"])


def test_an_objective_returning_the_wrong_number_of_values_fails_its_trial(tmp_path):
    study = ns.create_study(space="nb201", dataset="cifar10", objectives=["valid_acc:max", "latency:min"],
                            storage=str(tmp_path / "r"), strategy="random")
    study.optimize(lambda arch: 1.0, n_trials=1)
    trial = study.trials[0]
    assert trial.state == "failed" and "returned 1 value(s) for 2 objective(s)" in json.dumps(trial.record["seeds"])


def test_params_may_be_left_out_of_the_return_and_come_from_the_compiler(tmp_path):
    study = ns.create_study(space="nb201", dataset="cifar10", objectives=["valid_acc:max", "params:min"],
                            storage=str(tmp_path / "r"), strategy="random")
    study.optimize(lambda arch: 5.0, n_trials=2)
    for t in study.trials:
        assert t.values == [5.0, float(t.params)] and t.params > 0


def test_create_study_refuses_an_existing_study_unless_asked_to_load_it(tmp_path):
    study = ns.create_study(space="nb201", dataset="cifar10", storage=str(tmp_path), study_name="s",
                            strategy="random")
    study.optimize(lambda arch: 1.0, n_trials=1)
    with pytest.raises(ConfigError, match="load_if_exists"):
        ns.create_study(space="nb201", dataset="cifar10", storage=str(tmp_path), study_name="s")
    again = ns.create_study(space="nb201", dataset="cifar10", storage=str(tmp_path), study_name="s",
                            strategy="random", load_if_exists=True)
    again.optimize(lambda arch: 2.0, n_trials=1)
    assert [t.value for t in again.trials] == [1.0, 2.0]


def test_directions_are_checked_and_named(tmp_path):
    with pytest.raises(ConfigError, match="maximize or minimize"):
        ns.create_study(space="nb201", storage=str(tmp_path), directions=["up"])
    study = ns.create_study(space="nb201", storage=str(tmp_path), directions=["maximize", "minimize"])
    assert [str(o) for o in study.objectives] == ["valid_acc:max", "value_1:min"]
    assert study.directions == ["maximize", "minimize"]


def test_trials_dataframe_is_a_list_of_dicts_without_pandas(tmp_path, monkeypatch):
    study = ns.create_study(space="nb201", dataset="cifar10", storage=str(tmp_path), strategy="random")
    study.optimize(lambda arch: float(arch.number), n_trials=2)
    monkeypatch.setitem(sys.modules, "pandas", None)
    rows = study.trials_dataframe()
    assert [(r["number"], r["state"], r["values_valid_acc"]) for r in rows] == [(1, "ok", 1.0), (2, "ok", 2.0)]


# ---------------------------------------------------------------------- registration


def test_register_strategy_refuses_what_is_not_a_named_strategy_and_a_taken_name():
    with pytest.raises(TypeError):
        ns.register_strategy(object)

    class Nameless(ns.Strategy):
        pass

    with pytest.raises(ValueError, match="own `name`"):
        ns.register_strategy(Nameless)

    class Clash(ns.Strategy):
        name = "rea"

    with pytest.raises(ValueError, match="exists already"):
        ns.register_strategy(Clash)


def test_a_registered_evaluator_serves_the_cli_run(tmp_path):
    class Constant(ns.Evaluator):
        def __init__(self, config):
            self.queue, self.config = [], config

        def submit(self, trial):
            self.queue.append(trial)

        def pending(self):
            return len(self.queue)

        def wait(self, timeout=None):
            t = self.queue.pop(0)
            return [ns.SeedOutcome(t.arch_id, s, "ok", valid_acc=42.0, objectives={"energy": 3.0}) for s in t.seeds]

    ns.register_evaluator("constant-test", lambda config, store, depths: Constant(config))
    run = tmp_path / "r"
    result = CliRunner().invoke(main, ["run", "--space", "nb201", "--dataset", "cifar10", "--strategy", "random",
                                       "--evaluator", "constant-test", "--objective", "valid_acc:max,energy:min",
                                       "--trials", "3", "--run-dir", str(run), "--format", "json"])
    assert result.exit_code == 0, result.output
    trials = ns.load_study(run).trials
    assert [t.values for t in trials] == [[42.0, 3.0]] * 3


def test_entry_points_register_a_strategy_and_an_evaluator(tmp_path, monkeypatch):
    """A package declaring `nader.strategies` / `nader.evaluators` entry points (a dist-info on
    sys.path, as pip installs one) is found by name, without any registration call."""
    pkg = tmp_path / "site"
    (pkg / "plugin_t29a").mkdir(parents=True)
    (pkg / "plugin_t29a" / "__init__.py").write_text(textwrap.dedent("""
        from nader.search import Strategy

        class RootOnly(Strategy):
            name = "root-only-ep"

            def ask(self, tree, rng):
                return tree.root

        def make(config, store, depths):
            raise RuntimeError("not called in this test")
    """))
    info = pkg / "plugin_t29a-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-t29a\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nader.strategies]\nroot-only-ep = plugin_t29a:RootOnly\n\n"
                                           "[nader.evaluators]\nep-eval = plugin_t29a:make\n")
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setattr(registry, "_loaded", set())
    assert get_strategy("root-only-ep").__name__ == "RootOnly"
    assert registry.evaluator_factory("ep-eval").__name__ == "make"


def test_a_broken_entry_point_is_one_configuration_error(tmp_path, monkeypatch):
    pkg = tmp_path / "site"
    info = pkg / "broken_t29a-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-t29a\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nader.strategies]\nbroken = no_such_module_t29a:X\n")
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setattr(registry, "_loaded", set())
    with pytest.raises(ConfigError, match="broken = no_such_module_t29a:X"):
        registry.load_entry_points(registry.STRATEGY_GROUP)


def test_a_study_with_a_table_evaluator_optimizes_without_a_function_as_the_cli_would(tmp_path):
    table = tmp_path / "t.csv"
    D.write(table)
    study = ns.create_study(space="nb201", dataset="cifar10", evaluator=f"table:{table}", preset="nb201-12",
                            seeds=[777], storage=str(tmp_path / "r"), strategy="random")
    summary = study.optimize(n_trials=2)
    assert summary.trials == 2
    assert [t.value for t in study.trials] == [D.smooth_accuracy(nb201.cell_of_text(t.text)) for t in study.trials]
    python = ns.create_study(space="nb201", storage=str(tmp_path / "p"))
    with pytest.raises(ConfigError, match="pass it"):
        python.optimize(n_trials=1)


def test_several_objectives_without_pymoo_are_refused_by_create_study(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pymoo", None)
    with pytest.raises(ConfigError, match="need pymoo"):
        ns.create_study(space="nb201", storage=str(tmp_path), directions=["maximize", "minimize"])
    assert not (tmp_path / "runs.sqlite").exists()


def test_numpy_and_torch_scalars_are_values_and_text_is_refused(tmp_path):
    import numpy

    study = ns.create_study(space="nb201", dataset="cifar10", objectives=["valid_acc:max", "energy:min"],
                            storage=str(tmp_path), strategy="random")
    answers = iter([(numpy.float32(3.5), torch.tensor(2.0)), ("high", 1.0)])
    study.optimize(lambda arch: next(answers), n_trials=2)
    first, second = study.trials
    assert first.values == [3.5, 2.0]
    assert second.state == "failed" and "expected a number" in json.dumps(second.record["seeds"])


def test_ask_raises_the_loops_error_in_the_callers_thread(tmp_path):
    study = ns.create_study(space="nb201", dataset="cifar10", storage=str(tmp_path), strategy="no-such-strategy")
    with pytest.raises(ConfigError, match="unknown strategy 'no-such-strategy'"):
        study.ask()
    assert study.close() is None  # nothing left running
    assert not (tmp_path / "runs.sqlite").exists()


def test_optimize_timeout_is_the_search_time_limit(tmp_path):
    study = ns.create_study(space="nb201", dataset="cifar10", storage=str(tmp_path), strategy="random")
    summary = study.optimize(lambda arch: 1.0, n_trials=50, timeout=1e-9)
    # No trial starts after the limit (random in the cell space trains no root: --root none).
    assert summary.stop.code == "time-limit" and summary.trials == 0
