"""Runs that must fail are refused before the first trial (issue 29, point 2): each doomed
configuration of the issue exits 2 with one line naming the fix, and leaves no trial behind.
Missing packages are simulated by blocking their import, never by uninstalling."""
from __future__ import annotations

import json
import sqlite3
import sys

import pytest
from click.testing import CliRunner

import derived_tables as D
from nader.cli import main
from nader.search import preflight as P
from nader.search.config import merge
from nader.search.spaces import nb201 as S

ROOT = S.CellStructure.parse(S.RESNET)
NEIGHBOURS = [S.CellStructure(ROOT.ops[:i] + (op,) + ROOT.ops[i + 1:]) for i in range(6) for op in S.OPS
              if op != ROOT.ops[i]]
CELLS = [ROOT, *NEIGHBOURS]


def _run(tmp_path, *args, run="run"):
    return CliRunner().invoke(main, ["run", *args, "--run-dir", str(tmp_path / run), "--format", "json"],
                              catch_exceptions=False)


def _refused(result, tmp_path, *fragments, run="run"):
    """Exit 2, one line on stderr holding every fragment, no traceback, and no trial stored."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output
    db = tmp_path / run / "runs.sqlite"
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM archs").fetchone()[0] == 0
    return lines[0]


def _table_args(path, *extra):
    return ["--space", "nb201", "--evaluator", f"table:{path}", "--dataset", "cifar10", "--seeds", "777",
            "--strategy", "random", "--trials", "5", "--root", "train", *extra]  # the tables hold the root


def _genius_json(path, cells=CELLS):
    """GENIUS's public NAS-Bench-201 layout: {arch: {val_acc_200, test_acc_200, rank}}."""
    data = {str(c): {"val_acc_200": D.smooth_accuracy(c), "test_acc_200": D.smooth_accuracy(c) + 1, "rank": i + 1}
            for i, c in enumerate(cells)}
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def block(monkeypatch):
    """block(name): imports of `name` fail from now on, as if it were not installed."""
    class Blocker:
        def __init__(self):
            self.names = set()

        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in self.names:
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    blocker = Blocker()
    monkeypatch.setattr(sys, "meta_path", [blocker, *sys.meta_path])

    def block(name):
        blocker.names.add(name)
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, module)
    return block


# ---------------------------------------------------------------------- tables


def test_geniuss_json_with_the_12_epoch_preset_is_refused_and_runs_at_200_epochs_without_a_map(tmp_path):
    path = _genius_json(tmp_path / "nb201_genius.json", S.all_cells())
    line = _refused(_run(tmp_path, *_table_args(path, "--preset", "nb201-12")), tmp_path,
                    "no validation accuracy at 12 epochs", "--preset nb201 or --epochs 200")
    assert "val_acc_200" in line  # the columns it has are named
    done = _run(tmp_path, *_table_args(path, "--preset", "nb201"), run="ok")
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["trials"] == 5 and not out["failures"]
    assert "valid_acc@200 <- val_acc_200" in done.stderr and "test_acc@200 <- test_acc_200" in done.stderr
    best = S.cell_of_text(out["best"]["text"])
    assert out["best"]["valid_acc"] == D.smooth_accuracy(best)
    assert out["best"]["test_acc"] == D.smooth_accuracy(best) + 1


def test_a_typo_in_a_table_map_column_is_refused_with_the_close_name(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(f"arch,val_acc,final\n{ROOT},70,93\n")
    _refused(_run(tmp_path, *_table_args(path, "--preset", "nb201-12", "--table-map",
                                         "valid_acc@12=val_ac,test_acc@200=final")),
             tmp_path, "--table-map valid_acc@12=val_ac", "no column 'val_ac'", "did you mean 'val_acc'?")


def test_a_simulated_time_limit_on_a_table_without_epoch_times_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(f"arch,valid_acc@12,test_acc@200\n{ROOT},70,93\n")
    _refused(_run(tmp_path, *_table_args(path, "--preset", "nb201-12", "--time-limit", "sim:20000")),
             tmp_path, "--time-limit sim:20000", "no seconds per epoch", "epoch_seconds=COLUMN")


def test_a_cifar10_table_asked_for_imagenet16_120_is_refused_and_per_dataset_columns_are_recognised(tmp_path):
    path = tmp_path / "t.csv"
    rows = "\n".join(f"{c},{D.smooth_accuracy(c)},{D.smooth_accuracy(c) + 2},50,51" for c in CELLS)
    path.write_text("arch,cifar10-valid-valid-accuracy-12,cifar10-valid-test-accuracy-200,"
                    f"cifar100_x-valid_acc_12,cifar100_x-test_acc_200\n{rows}\n")
    args = ["--space", "nb201", "--evaluator", f"table:{path}", "--seeds", "777", "--preset", "nb201-12",
            "--strategy", "random", "--trials", "3", "--root", "train"]  # the table holds the root
    _refused(_run(tmp_path, *args, "--dataset", "imagenet16-120"), tmp_path,
             "holds cifar10-valid, cifar100, not imagenet16-120", "--dataset cifar10-valid or cifar100")
    done = _run(tmp_path, *args, "--dataset", "cifar10", run="c10")
    assert done.exit_code == 0, done.output
    best = json.loads(done.stdout)["best"]
    assert best["valid_acc"] == D.smooth_accuracy(S.cell_of_text(best["text"]))
    done = _run(tmp_path, *args, "--dataset", "cifar100", run="c100")
    assert done.exit_code == 0, done.output
    assert (json.loads(done.stdout)["best"]["valid_acc"], json.loads(done.stdout)["best"]["test_acc"]) == (50, 51)


def test_a_table_named_for_cifar10_asked_for_imagenet16_120_is_refused(tmp_path):
    path = _genius_json(tmp_path / "nb201_cifar10_full.json")
    _refused(_run(tmp_path, *_table_args(path, "--preset", "nb201", "--dataset", "imagenet16-120")), tmp_path,
             "its name says cifar10", "choose --dataset cifar10", "imagenet16-120:COLUMN")
    done = _run(tmp_path, *_table_args(path, "--preset", "nb201", "--trials", "1"), run="ok")  # cifar10: runs
    assert done.exit_code == 0, done.output
    plain = _genius_json(tmp_path / "genius.json")  # a name that says nothing: taken as asked, with a warning
    done = _run(tmp_path, *_table_args(plain, "--preset", "nb201", "--dataset", "imagenet16-120", "--trials", "1"),
                run="plain")
    assert done.exit_code == 0, done.output
    assert "the columns name no dataset: their numbers are taken as imagenet16-120's" in done.stderr


def test_two_columns_that_read_as_one_metric_are_left_to_the_table_map(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(f"arch,val_acc_12,valid_acc_12,test_acc_200\n{ROOT},70,71,93\n")
    _refused(_run(tmp_path, *_table_args(path, "--preset", "nb201-12")), tmp_path,
             "no validation accuracy at 12 epochs", "--table-map valid_acc@12=COLUMN")
    done = _run(tmp_path, *_table_args(path, "--preset", "nb201-12", "--table-map", "valid_acc@12=valid_acc_12",
                                       "--trials", "1"), run="mapped")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["best"]["valid_acc"] == 71


# ---------------------------------------------------------------------- official benchmark files


@pytest.fixture(scope="module")
def nats_file(tmp_path_factory):
    pytest.importorskip("nats_bench.api_utils")
    import nb201_table as T

    return T.write_table("nats-bench", tmp_path_factory.mktemp("nats"), CELLS)


def test_a_nats_file_without_the_requested_seed_is_refused(tmp_path, nats_file):
    args = ["--space", "nb201", "--evaluator", f"nats-bench:{nats_file}", "--dataset", "cifar10", "--preset",
            "nb201-12", "--strategy", "random", "--trials", "3", "--root", "train"]
    _refused(_run(tmp_path, *args, "--seeds", "777,888"), tmp_path, "no trial with seed 888", "seeds [777]",
             "give --seeds from those")
    done = _run(tmp_path, *args, "--seeds", "777", run="ok")
    assert done.exit_code == 0, done.output


def test_a_nats_file_of_cifar10_asked_for_imagenet16_120_is_refused(tmp_path, nats_file):
    _refused(_run(tmp_path, "--space", "nb201", "--evaluator", f"nats-bench:{nats_file}", "--dataset",
                  "imagenet16-120", "--preset", "nb201-12", "--seeds", "777"), tmp_path,
             "holds cifar10-valid, not ImageNet16-120", "choose --dataset cifar10")


# ---------------------------------------------------------------------- packages and data


def test_missing_scikit_learn_is_refused_before_the_digits_run_trains(tmp_path, block):
    from search_helpers import EXAMPLE

    block("sklearn")
    _refused(_run(tmp_path, "--from", str(EXAMPLE), "--trials", "2"), tmp_path,
             "the digits dataset needs scikit-learn", "pip install 'nader-toolchain[data]'")
    assert not (tmp_path / "run" / "runs.sqlite").exists()


def test_tree_with_pareto_selection_without_pymoo_is_refused_before_any_trial(tmp_path, block):
    from search_helpers import EXAMPLE

    block("pymoo")
    _refused(_run(tmp_path, "--from", str(EXAMPLE), "--strategy", "tree", "--option", "selection=pareto"),
             tmp_path, "selection=pareto needs pymoo", "nader-toolchain[pareto]")


@pytest.mark.parametrize("settings,module,fragment", [
    ({"executor": "ray"}, "ray", "the Ray executor needs ray"),
    ({"strategy": "genius", "space": "nb201", "dataset": "cifar10"}, "openai", "genius strategy's LLM client"),
    ({"strategy": "nader"}, "faiss", "nader strategy's knowledge base needs faiss-cpu"),
    ({"strategy": "fairnad"}, "pymoo", "fairnad's Pareto ranking needs pymoo"),
])
def test_every_optional_package_the_settings_need_is_checked(block, settings, module, fragment):
    from search_helpers import EXAMPLE

    config = merge({"root": str(EXAMPLE), **settings})
    config.check()
    assert module in [m for m, _, _ in P.needed_packages(config)]
    P.check_packages(config)  # installed here: no refusal
    block(module)
    with pytest.raises(P.ConfigError, match=fragment):
        P.check_packages(config)


def test_what_the_settings_do_not_use_is_not_required():
    from search_helpers import EXAMPLE

    table = merge({"space": "nb201", "dataset": "cifar10", "evaluator": "table:/x.csv", "strategy": "rea"})
    assert P.needed_packages(table) == []  # a table run reads no data: no scikit-learn
    replay = merge({"root": str(EXAMPLE), "strategy": "genius", "strategy_options": {"replay": "/r"}})
    assert "openai" not in [m for m, _, _ in P.needed_packages(replay)]
    assert [m for m, _, _ in P.needed_packages(merge({"root": str(EXAMPLE)}))] == ["sklearn"]


def test_an_unreadable_data_file_is_refused_up_front(tmp_path, monkeypatch):
    """Running as root reads every file, so the permission error is simulated at open()."""
    from pathlib import Path

    from search_helpers import EXAMPLE

    folder = tmp_path / "data" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (folder / name).write_bytes(b"x")
    real_open = Path.open

    def deny(self, *args, **kwargs):
        if self.name == "data_batch_3":
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    _refused(_run(tmp_path, "--from", str(EXAMPLE), "--dataset", "cifar10", "--data-dir", str(tmp_path / "data")),
             tmp_path, "cannot read", "data_batch_3", "Permission denied", "make the data folder readable")


# ---------------------------------------------------------------------- issue 30, points 25 and 26


def test_a_table_evaluator_without_the_cell_space_points_at_it(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(f"arch,valid_acc@12\n{ROOT},70\n")
    line = _refused(_run(tmp_path, "--evaluator", f"table:{path}", "--dataset", "cifar10"), tmp_path,
                    "add --space nb201")
    assert "--from" not in line


def test_a_table_asked_for_digits_names_the_evaluator_once(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(f"arch,valid_acc@12\n{ROOT},70\n")
    line = _refused(_run(tmp_path, "--space", "nb201", "--evaluator", f"table:{path}"), tmp_path,
                    "a derived table has no digits results", "choose --dataset")
    assert "table table" not in line
