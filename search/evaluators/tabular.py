"""Tabular evaluators: answer a trial from NAS-Bench-201's or NATS-Bench's table, no training.

    ev = open_evaluator("nats-bench:/data/NATS-tss-v1_0-3ffb9.pickle.pbz2")
    rec = ev.evaluate("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
                      dataset="cifar10-valid", epochs=12, seed=777)
    rec.valid_acc, rec.test_acc, rec.seconds, rec.params, rec.flops

The user supplies the benchmark file; nothing is downloaded. The answer comes from the official
API packages (``nats_bench`` for ``nats-bench:``, ``nas_201_api`` for ``nas-bench-201:``), given
the table as a dict that we load ourselves without running code: NATS-Bench's ``.pickle.pbz2``
through a restricted unpickler (plain containers only), NAS-Bench-201's ``.pth`` through
``torch.load(weights_only=True)``.

**The evaluator interface** (what the search loop calls; :class:`Evaluator`):
``evaluate(arch, dataset, epochs, seed) -> TrialRecord``. ``arch`` is a NAS-Bench-201 string or
block text (an architecture file or its base block) whose cell is in the space; ``dataset`` is one
of our names (``cifar10-valid``, ``cifar10``, ``cifar100``, ``imagenet16-120``); ``epochs`` is the
budget: 12 or 200 read the table of that schedule, any other N reads epoch N of the 200-epoch
schedule; ``seed`` picks one of the table's trials (``None``: the mean over its trials). The record
holds ``valid_acc`` and ``test_acc`` (percent), ``seconds`` (the simulated training time:
training time up to that epoch plus one validation pass, as NATS-Bench's ``simulate_train_eval``
counts it), ``params`` and ``flops`` (counts). An architecture outside the space raises
:class:`EvaluatorError` with the reason.

Sets per dataset (NB201's): ``cifar10-valid`` valid = ``x-valid``, test = ``ori-test``;
``cifar10`` valid = none, test = ``ori-test``; ``cifar100`` and ``imagenet16-120`` valid =
``x-valid``, test = ``x-test``.
"""
from __future__ import annotations

import bz2
import pickle
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Protocol, Union

from nader.search.spaces import nb201

API_DATASET = {"cifar10-valid": "cifar10-valid", "cifar10": "cifar10", "cifar100": "cifar100",
               "imagenet16-120": "ImageNet16-120"}
_VALID_SET = {"cifar10-valid": "x-valid", "cifar10": None, "cifar100": "x-valid", "imagenet16-120": "x-valid"}
_TEST_SET = {"cifar10-valid": "ori-test", "cifar10": "ori-test", "cifar100": "x-test", "imagenet16-120": "x-test"}
KINDS = ("nats-bench", "nas-bench-201")
TABULAR_DATASETS = ("cifar10", "cifar10-valid", "cifar100", "imagenet16-120")  # the search's names (cifar10: cifar10-valid)


class EvaluatorError(Exception):
    """A trial the evaluator cannot answer, or a benchmark file it cannot read; the message says why."""


@dataclass
class TrialRecord:
    arch: str  # the NAS-Bench-201 string that was looked up
    dataset: str
    epochs: int
    seed: Optional[int]  # None: mean over the table's trials
    valid_acc: Optional[float]  # percent; None where the setting has no validation set
    test_acc: Optional[float]
    seconds: Optional[float]  # simulated training time (see the module docstring)
    params: int
    flops: int
    source: str = ""  # e.g. "nats-bench:NATS-tss-v1_0-3ffb9.pickle.pbz2 hp=12"
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class Evaluator(Protocol):
    """What the search loop needs from any evaluator (tabular here, training elsewhere)."""

    def evaluate(self, arch: str, dataset: str, epochs: int, seed: Optional[int] = None) -> TrialRecord: ...


# -- reading benchmark files without running code -----------------------------------------------

_SAFE = {("collections", "OrderedDict"), ("collections", "defaultdict"), ("builtins", "set"),
         ("builtins", "frozenset"), ("builtins", "slice"), ("copy_reg", "_reconstructor"),
         ("builtins", "object"), ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
         ("numpy", "dtype")}


class _TableUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: a benchmark table holds plain data only")


def load_table(kind: str, path: Union[str, Path]) -> dict:
    """The benchmark's table as the dict its API accepts."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise EvaluatorError(f"{kind}: {path} is a folder; give the single benchmark file "
                             f"(NATS-Bench: NATS-tss-*.pickle.pbz2; NAS-Bench-201: NAS-Bench-201-v1_*.pth)")
    if not path.is_file():
        raise EvaluatorError(f"{kind}: no benchmark file at {path} (nothing is downloaded; the user supplies it)")
    try:
        if kind == "nats-bench":
            with bz2.open(path, "rb") as f:
                table = _TableUnpickler(f).load()
        else:
            import torch

            table = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt, wrong format, unsafe content
        raise EvaluatorError(f"{kind}: cannot read {path}: {type(exc).__name__}: {str(exc)[:300]}") from None
    if not isinstance(table, dict) or not {"meta_archs", "arch2infos", "evaluated_indexes"} <= set(table):
        raise EvaluatorError(f"{kind}: {path} is not a {kind} table (expected keys meta_archs, arch2infos, "
                             f"evaluated_indexes)")
    return table


def _api(kind: str, table: dict):
    try:
        if kind == "nats-bench":
            import nats_bench

            return nats_bench.create(table, "tss", fast_mode=False, verbose=False)
        from nas_201_api import NASBench201API

        return NASBench201API(table, verbose=False)
    except ImportError:
        raise EvaluatorError(f"{kind}: the API package is not installed: pip install 'nader-toolchain[tabular]'") \
            from None
    except Exception as exc:
        raise EvaluatorError(f"{kind}: the API refused the table: {type(exc).__name__}: {str(exc)[:300]}") from None


# -- the evaluator ------------------------------------------------------------------------------

class TabularEvaluator:
    """Answers trials from one benchmark file through its official API."""

    def __init__(self, kind: str, path: Union[str, Path]):
        if kind not in KINDS:
            raise EvaluatorError(f"unknown tabular benchmark {kind!r}; choose {' or '.join(KINDS)}")
        self.kind, self.path = kind, Path(path)
        self.api = _api(kind, load_table(kind, path))

    def __repr__(self) -> str:
        return f"TabularEvaluator({self.kind}:{self.path})"

    def cell(self, arch: str) -> nb201.Cell:
        """The space's cell of a string or block text; EvaluatorError when it is not one."""
        text = (arch or "").strip()
        try:
            if text.startswith("|"):
                cell = nb201.Cell.parse(text)
            else:
                cell = nb201.cell_of_text(text)
        except nb201.NotInSpace as exc:
            raise EvaluatorError(f"{self.kind} answers only NAS-Bench-201 cells: {exc}") from None
        return cell

    def evaluate(self, arch: str, dataset: str, epochs: int, seed: Optional[int] = None) -> TrialRecord:
        cell = self.cell(arch)
        key = str(dataset).strip().lower()
        if key not in API_DATASET:
            raise EvaluatorError(f"{self.kind}: no table for dataset {dataset!r}; choose {', '.join(API_DATASET)}")
        name = API_DATASET[key]
        index = self.api.query_index_by_arch(str(cell))
        if index is None or index < 0:
            raise EvaluatorError(f"{self.kind}: {cell} is not in {self.path.name}")
        hps = {str(h) for h in self.api.avaliable_hps}
        epochs = int(epochs)
        if str(epochs) in hps:
            hp, iepoch = str(epochs), None
        elif "200" in hps and 1 <= epochs < 200:
            hp, iepoch = "200", epochs - 1  # epoch N of the 200-epoch schedule
        else:
            raise EvaluatorError(f"{self.kind}: no results for {epochs} epochs; the table has schedules of "
                                 f"{', '.join(sorted(hps, key=int))} epochs (and every epoch of the 200-epoch one)")
        results = self.api.query_meta_info_by_index(index, hp)
        seeds = list(results.get_dataset_seeds(name)) if name in results.get_dataset_names() else []
        if not seeds:
            raise EvaluatorError(f"{self.kind}: {self.path.name} has no {name} results for {cell} (hp={hp})")
        if seed is not None and int(seed) not in seeds:
            raise EvaluatorError(f"{self.kind}: no trial with seed {seed} for {cell} on {name} (hp={hp}); "
                                 f"the table has seeds {seeds}, or give no seed for their mean")
        pick = False if seed is None else int(seed)
        train = results.get_metrics(name, "train", iepoch=iepoch, is_random=pick)
        valid = results.get_metrics(name, _VALID_SET[key], iepoch=iepoch, is_random=pick) if _VALID_SET[key] else None
        test = results.get_metrics(name, _TEST_SET[key], iepoch=iepoch, is_random=pick)
        epochs_run = train["iepoch"] + 1
        seconds = None
        if train.get("all_time") is not None:
            per_eval = (valid or test).get("all_time")
            seconds = train["all_time"] + (per_eval / epochs_run if per_eval is not None else 0.0)
        cost = self.api.get_cost_info(index, name, hp=hp)
        return TrialRecord(arch=str(cell), dataset=key, epochs=epochs, seed=seed,
                           valid_acc=None if valid is None else float(valid["accuracy"]),
                           test_acc=float(test["accuracy"]), seconds=seconds,
                           params=int(round(cost["params"] * 1e6)), flops=int(round(cost["flops"] * 1e6)),
                           source=f"{self.kind}:{self.path.name} hp={hp}",
                           extra={"index": int(index), "train_acc": float(train["accuracy"]), "seeds": seeds})


def open_evaluator(spec: str) -> TabularEvaluator:
    """``nats-bench:PATH`` or ``nas-bench-201:PATH`` (the form ``--evaluator`` takes)."""
    kind, sep, path = (spec or "").partition(":")
    if not sep or not path:
        raise EvaluatorError(f"expected nats-bench:PATH or nas-bench-201:PATH, not {spec!r}")
    return TabularEvaluator(kind.strip().lower(), path)
