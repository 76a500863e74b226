"""Tabular evaluators: a small table in each benchmark's own format (written here with the API
packages' own classes), answered through the official APIs."""
from __future__ import annotations

import bz2
import os
import pickle

import pytest

from nader.search.tables.base import TableError
from nader.search.tables.benchmark import BenchmarkTable
from nader.search.tables.lookup import open_table
from nader.search.spaces import nb201 as S

nats_api = pytest.importorskip("nats_bench.api_utils")
nb201_api = pytest.importorskip("nas_201_api.api_utils")

BEST = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
OTHER = "|avg_pool_3x3~0|+|skip_connect~0|avg_pool_3x3~1|+|skip_connect~0|none~1|avg_pool_3x3~2|"
ARCHS = [S.RESNET, BEST, OTHER]
SETS = {"cifar10-valid": ("x-valid", "ori-test"), "cifar10": ("ori-test",), "cifar100": ("x-valid", "x-test", "ori-test"),
        "ImageNet16-120": ("x-valid", "x-test", "ori-test")}
SEEDS = {"cifar10-valid": (777, 888), "cifar10": (777,), "cifar100": (777,), "ImageNet16-120": (777,)}
EVAL_OFFSET = {"x-valid": 0.0, "ori-test": 1.0, "x-test": 2.0}


def accuracy(arch: int, dataset: str, seed: int, what: str, epoch: int, epochs: int) -> float:
    """The made-up accuracy stored for one cell of the table (every entry differs)."""
    base = 40 + 10 * arch + {"cifar10-valid": 0, "cifar10": 3, "cifar100": -20, "ImageNet16-120": -30}[dataset]
    return base + (seed - 777) / 100 + EVAL_OFFSET.get(what, -1.0) + 0.1 * epoch + (0.5 if epochs == 12 else 0)


def arch_results(api, index: int, arch: str, epochs: int):
    ar = api.ArchResults(index, arch)
    for dataset, seeds in SEEDS.items():
        for seed in seeds:
            rc = api.ResultsCount(dataset, None, None, None, 0.5 + index, 80.0 + index, None, seed, epochs, [0.01])
            train = {e: accuracy(index, dataset, seed, "train", e, epochs) for e in range(epochs)}
            rc.update_train_info(train, None, {e: 1.0 for e in range(epochs)}, {e: 2.0 for e in range(epochs)})
            accs, losses, times = {}, {}, {}
            for name in SETS[dataset]:
                for e in range(epochs):
                    accs[f"{name}@{e}"] = accuracy(index, dataset, seed, name, e, epochs)
                    losses[f"{name}@{e}"], times[f"{name}@{e}"] = 1.0, 0.25
            rc.update_eval(accs, losses, times)
            ar.update(dataset, seed, rc)
    return ar.state_dict()


@pytest.fixture(scope="module")
def nats_file(tmp_path_factory):
    table = {"meta_archs": ARCHS, "evaluated_indexes": list(range(len(ARCHS))),
             "arch2infos": {i: {"12": arch_results(nats_api, i, a, 12), "200": arch_results(nats_api, i, a, 200)}
                            for i, a in enumerate(ARCHS)}}
    stem = tmp_path_factory.mktemp("nats") / "NATS-tss-test.pickle"
    nats_api.pickle_save(table, str(stem))  # the API's own writer: adds ".pbz2"
    return stem.with_name(stem.name + ".pbz2")


@pytest.fixture(scope="module")
def nb201_file(tmp_path_factory):
    import torch

    table = {"meta_archs": ARCHS, "evaluated_indexes": list(range(len(ARCHS))),
             "arch2infos": {i: {"less": arch_results(nb201_api, i, a, 12), "full": arch_results(nb201_api, i, a, 200)}
                            for i, a in enumerate(ARCHS)}}
    path = tmp_path_factory.mktemp("nb201") / "NAS-Bench-201-test.pth"
    torch.save(table, path)
    return path


@pytest.fixture(params=["nats-bench", "nas-bench-201"])
def evaluator(request, nats_file, nb201_file):
    path = nats_file if request.param == "nats-bench" else nb201_file
    return open_table(f"{request.param}:{path}")


def test_valid_and_test_accuracy_at_the_12_epoch_budget(evaluator):
    rec = evaluator.evaluate(BEST, "cifar10-valid", epochs=12, seed=888)
    assert rec.valid_acc == pytest.approx(accuracy(1, "cifar10-valid", 888, "x-valid", 11, 12))
    assert rec.test_acc == pytest.approx(accuracy(1, "cifar10-valid", 888, "ori-test", 11, 12))
    # simulated time: 12 training epochs of 2 s plus one validation pass of 0.25 s
    assert rec.seconds == pytest.approx(12 * 2.0 + 0.25)
    assert rec.params == 1_500_000 and rec.flops == 81_000_000
    assert rec.arch == BEST and rec.epochs == 12 and "hp=12" in rec.source


def test_mean_over_trials_and_an_epoch_of_the_200_epoch_schedule(evaluator):
    mean = evaluator.evaluate(S.RESNET, "cifar10-valid", epochs=200, seed=None)
    expect = [accuracy(0, "cifar10-valid", s, "x-valid", 199, 200) for s in (777, 888)]
    assert mean.valid_acc == pytest.approx(sum(expect) / 2)
    rec = evaluator.evaluate(S.RESNET, "cifar100", epochs=36, seed=777)
    assert rec.valid_acc == pytest.approx(accuracy(0, "cifar100", 777, "x-valid", 35, 200))
    assert rec.test_acc == pytest.approx(accuracy(0, "cifar100", 777, "x-test", 35, 200))
    assert rec.seconds == pytest.approx(36 * 2.0 + 0.25) and "hp=200" in rec.source


def test_cifar10_has_no_validation_set_and_imagenet_uses_its_halves(evaluator):
    rec = evaluator.evaluate(OTHER, "cifar10", epochs=12, seed=777)
    assert rec.valid_acc is None and rec.test_acc == pytest.approx(accuracy(2, "cifar10", 777, "ori-test", 11, 12))
    rec = evaluator.evaluate(OTHER, "imagenet16-120", epochs=12)
    assert rec.test_acc == pytest.approx(accuracy(2, "ImageNet16-120", 777, "x-test", 11, 12))


def test_block_text_is_looked_up_by_its_cell(evaluator):
    rec = evaluator.evaluate(S.architecture(BEST), "cifar10-valid", epochs=12, seed=777)
    assert rec.arch == BEST


@pytest.mark.parametrize("arch,why", [
    ("##A##\n0:input\n1:output\n2:GELU\n0->2\n2->1\n", "only NAS-Bench-201 cells.*uses GELU"),
    ("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "unknown operation"),
    ("|nor_conv_1x1~0|+|none~0|none~1|+|nor_conv_1x1~0|none~1|none~2|", "is not in"),  # in the space, not the table
])
def test_architectures_outside_the_space_or_table_are_refused(evaluator, arch, why):
    with pytest.raises(TableError, match=why):
        evaluator.evaluate(arch, "cifar10-valid", epochs=12)


def test_bad_requests_are_clear(evaluator):
    with pytest.raises(TableError, match=r"seed 999 .* seeds \[777, 888\]"):
        evaluator.evaluate(BEST, "cifar10-valid", epochs=12, seed=999)
    with pytest.raises(TableError, match="no results for 500 epochs"):
        evaluator.evaluate(BEST, "cifar10-valid", epochs=500)
    with pytest.raises(TableError, match="no table for dataset 'mnist'"):
        evaluator.evaluate(BEST, "mnist", epochs=12)


def test_files_are_read_without_running_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo should-not-run",))

    path = tmp_path / "evil.pickle.pbz2"
    with bz2.open(path, "wb") as f:
        pickle.dump({"meta_archs": [], "arch2infos": {}, "evaluated_indexes": [], "x": Evil()}, f)
    with pytest.raises(TableError, match="refusing to load posix.system"):
        BenchmarkTable("nats-bench", path)
    with pytest.raises(TableError, match="no benchmark file"):
        open_table(f"nas-bench-201:{tmp_path / 'missing.pth'}")
    with pytest.raises(TableError, match="expected nats-bench:PATH"):
        open_table("nats-bench")
    with pytest.raises(TableError, match="unknown tabular benchmark"):
        open_table(f"nasbench101:{path}")
