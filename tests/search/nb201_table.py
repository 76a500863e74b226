"""A generated NAS-Bench-201 table over the whole cell space, in either benchmark's own format
(written with the API packages' own classes), for searches with a tabular evaluator.

Made-up but structured numbers, so that searching has something to find: a cell's accuracy
grows with the convolutions that reach its output (3x3 more than 1x1), a zero-output cell sits
at chance, and a small per-string offset breaks ties. Only the search's setting is written:
`cifar10-valid` (the search's cifar10), seed 777, the 12-epoch schedule, and on request the
200-epoch one (`final=True`) and holes (`holes`: a cell's record, its 12-epoch schedule or its
validation accuracy left out).
"""
from __future__ import annotations

import hashlib

import pytest

from nader.search.spaces import nb201 as S

DATASET, SEED, EPOCHS = "cifar10-valid", 777, 12
EPOCH_SECONDS, EVAL_SECONDS = 10.0, 0.5  # a convolution adds 5 s per epoch


def valid_accuracy(cell, epoch: int = EPOCHS - 1) -> float:
    cell = S.as_cell(cell)
    if 3 in cell.zero_nodes():
        return 10.0
    eff = cell.effective()
    offset = int(hashlib.sha256(str(cell).encode()).hexdigest()[:4], 16) / 65536
    return 50.0 + 6 * eff.ops.count("nor_conv_3x3") + 3 * eff.ops.count("nor_conv_1x1") + \
        eff.ops.count("avg_pool_3x3") + offset + 0.1 * epoch


def test_accuracy(cell, epoch: int = EPOCHS - 1) -> float:
    return valid_accuracy(cell, epoch) - 1.0


def epoch_seconds(cell) -> float:
    eff = S.as_cell(cell).effective()
    return EPOCH_SECONDS + 5.0 * (eff.ops.count("nor_conv_3x3") + eff.ops.count("nor_conv_1x1"))


def simulated_seconds(cell) -> float:
    """What the evaluator reports: EPOCHS epochs of training plus one validation pass."""
    return EPOCHS * epoch_seconds(cell) + EVAL_SECONDS


def final_test_accuracy(cell) -> float:
    """The 200-epoch schedule's test accuracy (`final=True`): epoch 199 of the same curve."""
    return test_accuracy(cell, 199)


def _results(api, index: int, arch: str, epochs: int = EPOCHS, no_valid: bool = False) -> dict:
    ar = api.ArchResults(index, arch)
    rc = api.ResultsCount(DATASET, None, None, None, 0.5, 80.0, None, SEED, epochs, [0.01])
    per, first = epoch_seconds(arch), valid_accuracy(arch, 0)
    rc.update_train_info({e: first + 0.1 * e + 5 for e in range(epochs)}, None,
                         {e: 1.0 for e in range(epochs)}, {e: per for e in range(epochs)})
    accs, losses, times = {}, {}, {}
    for name, shift in (("x-valid", 0.0), ("ori-test", -1.0)):  # as valid_accuracy and test_accuracy
        for e in range(epochs):
            accs[f"{name}@{e}"], losses[f"{name}@{e}"], times[f"{name}@{e}"] = \
                first + 0.1 * e + shift, 1.0, EVAL_SECONDS
    if no_valid:
        accs[f"x-valid@{epochs - 1}"] = None
    rc.update_eval(accs, losses, times)
    ar.update(DATASET, SEED, rc)
    return ar.state_dict()


def write_table(kind: str, folder, cells=None, final: bool = False, holes=None):
    """The benchmark file of `kind` (nats-bench or nas-bench-201) over `cells` (default: all 15,625).
    nats-bench only: `final` adds the 200-epoch schedule; `holes` maps cell strings to
    ``absent`` (no record), ``no-12`` (no 12-epoch schedule) or ``none-valid`` (a None accuracy)."""
    archs = [str(c) for c in (cells if cells is not None else S.all_cells())]
    if kind == "nats-bench":
        from nats_bench import api_utils as api

        holes = {str(S.as_cell(c)): h for c, h in (holes or {}).items()}
        infos = {}
        for i, a in enumerate(archs):
            hole = holes.get(a)
            if hole == "absent":
                continue
            infos[i] = {} if hole == "no-12" else {"12": _results(api, i, a, no_valid=hole == "none-valid")}
            if final or hole == "no-12":
                infos[i]["200"] = _results(api, i, a, 200)
        table = {"meta_archs": archs, "evaluated_indexes": sorted(infos), "arch2infos": infos}
        stem = folder / f"NATS-tss-generated{'-final' if final else ''}{'-holes' if holes else ''}.pickle"
        api.pickle_save(table, str(stem))  # the API's own writer: adds ".pbz2"
        return stem.with_name(stem.name + ".pbz2")
    import torch
    from nas_201_api import api_utils as api

    table = {"meta_archs": archs, "evaluated_indexes": list(range(len(archs))),
             # its API insists on both schedules; the search reads "less" (12 epochs) only
             "arch2infos": {i: {"less": _results(api, i, a), "full": _results(api, i, a)} for i, a in enumerate(archs)}}
    path = folder / "NAS-Bench-201-generated.pth"
    torch.save(table, path)
    return path


@pytest.fixture(scope="session")
def nb201_table(tmp_path_factory):
    """A NATS-Bench file over the whole space, written once per test session (seconds to write);
    test modules import this fixture."""
    pytest.importorskip("nats_bench.api_utils")
    folder = tmp_path_factory.getbasetemp() / "nb201-table"
    path = folder / "NATS-tss-generated.pickle.pbz2"
    if not path.exists():
        folder.mkdir(exist_ok=True)
        assert write_table("nats-bench", folder) == path
    return path
