"""Benchmark tables: answer a trial from NAS-Bench-201's or NATS-Bench's table, no training.

    table = open_table("nats-bench:/data/NATS-tss-v1_0-3ffb9.pickle.pbz2")     # tables/lookup.py
    rec = table.evaluate("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
                      dataset="cifar10-valid", epochs=12, seed=777)
    rec.valid_acc, rec.test_acc, rec.seconds, rec.params, rec.flops

The user supplies the benchmark file; nothing is downloaded. The answer comes from the official
API packages (``nats_bench`` for ``nats-bench:``, ``nas_201_api`` for ``nas-bench-201:``), given
the table as a dict that we load ourselves without running code: NATS-Bench's ``.pickle.pbz2``
through a restricted unpickler (plain containers only), NAS-Bench-201's ``.pth`` through
``torch.load(weights_only=True)``.

**The table interface** (what the loop's `lookup.TableEvaluator` calls; :class:`base.Table`):
``evaluate(arch, dataset, epochs, seed) -> TableRecord``. ``arch`` is a NAS-Bench-201 string or
block text (an architecture file or its base block) whose cell is in the space; ``dataset`` is one
of our names (``cifar10-valid``, ``cifar10``, ``cifar100``, ``imagenet16-120``); ``epochs`` is the
budget: 12 or 200 read the table of that schedule, any other N reads epoch N of the 200-epoch
schedule; ``seed`` picks one of the table's trials (``None``: the mean over its trials). The record
holds ``valid_acc`` and ``test_acc`` (percent), ``seconds`` (the simulated training time:
training time up to that epoch plus one validation pass, as NATS-Bench's ``simulate_train_eval``
counts it), ``params`` and ``flops`` (counts). An architecture outside the space raises
:class:`TableError` with the reason.

Sets per dataset (NB201's): ``cifar10-valid`` valid = ``x-valid``, test = ``ori-test``;
``cifar10`` valid = none, test = ``ori-test``; ``cifar100`` and ``imagenet16-120`` valid =
``x-valid``, test = ``x-test``.
"""
from __future__ import annotations

import bz2
import pickle
from pathlib import Path
from typing import Optional, Union

from nader.search.spaces import nb201

from .base import ACCURACY, TableError, TableRecord, number

API_DATASET = {"cifar10-valid": "cifar10-valid", "cifar10": "cifar10", "cifar100": "cifar100",
               "imagenet16-120": "ImageNet16-120"}
_VALID_SET = {"cifar10-valid": "x-valid", "cifar10": None, "cifar100": "x-valid", "imagenet16-120": "x-valid"}
_TEST_SET = {"cifar10-valid": "ori-test", "cifar10": "ori-test", "cifar100": "x-test", "imagenet16-120": "x-test"}
KINDS = ("nats-bench", "nas-bench-201")
TABULAR_DATASETS = ("cifar10", "cifar10-valid", "cifar100", "imagenet16-120")  # the search's names (cifar10: cifar10-valid)


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
        raise TableError(f"{kind}: {path} is a folder; give the single benchmark file "
                             f"(NATS-Bench: NATS-tss-*.pickle.pbz2; NAS-Bench-201: NAS-Bench-201-v1_*.pth)")
    if not path.is_file():
        raise TableError(f"{kind}: no benchmark file at {path} (nothing is downloaded; the user supplies it)")
    try:
        if kind == "nats-bench":
            with bz2.open(path, "rb") as f:
                table = _TableUnpickler(f).load()
        else:
            import torch

            table = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt, wrong format, unsafe content
        raise TableError(f"{kind}: cannot read {path}: {type(exc).__name__}: {str(exc)[:300]}") from None
    if not isinstance(table, dict) or not {"meta_archs", "arch2infos", "evaluated_indexes"} <= set(table):
        raise TableError(f"{kind}: {path} is not a {kind} table (expected keys meta_archs, arch2infos, "
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
        raise TableError(f"{kind}: the API package is not installed: pip install 'nader-toolchain[tabular]'") \
            from None
    except Exception as exc:
        raise TableError(f"{kind}: the API refused the table: {type(exc).__name__}: {str(exc)[:300]}") from None


# -- the table ----------------------------------------------------------------------------------

class BenchmarkTable:
    """Answers trials from one benchmark file through its official API."""

    def __init__(self, kind: str, path: Union[str, Path]):
        if kind not in KINDS:
            raise TableError(f"unknown tabular benchmark {kind!r}; choose {' or '.join(KINDS)}")
        self.kind, self.path = kind, Path(path)
        self.api = _api(kind, load_table(kind, path))

    def __repr__(self) -> str:
        return f"BenchmarkTable({self.kind}:{self.path})"

    def cell(self, arch: str) -> nb201.CellStructure:
        """The space's cell of a string or block text; TableError when it is not one."""
        text = (arch or "").strip()
        try:
            if text.startswith("|"):
                cell = nb201.CellStructure.parse(text)
            else:
                cell = nb201.cell_of_text(text)
        except nb201.NotInSpace as exc:
            raise TableError(f"{self.kind} answers only NAS-Bench-201 cells: {exc}", "not-in-space") from None
        return cell

    def schedules(self) -> set:
        """The epoch budgets with a schedule of their own (e.g. {12, 200})."""
        return {int(h) for h in self.api.avaliable_hps}

    def test_schedules(self, dataset: str) -> set:
        """Epoch budgets whose test accuracy the table holds (every schedule's)."""
        return self.schedules()

    def valid_schedules(self, dataset: str) -> set:
        """Epoch budgets a trial can be answered at: each schedule, and every epoch of the
        200-epoch one where the table has it."""
        own = self.schedules()
        return own | set(range(1, 200)) if 200 in own else own

    def evaluate(self, arch: str, dataset: str, epochs: int, seed: Optional[int] = None,
                 test_epochs: Optional[int] = None) -> TableRecord:
        """The record at `epochs`; with `test_epochs` (NATS-Bench reports 200), test_acc is the
        mean test accuracy over that schedule's trials instead (None, with the reason in
        ``extra["test_missing"]``, when the table lacks it). A table with holes (an entry, an
        epoch, a seed or a number missing) raises TableError with the kind; the official
        APIs' own KeyError or TypeError on such a table is caught here."""
        try:
            return self._evaluate(arch, dataset, epochs, seed, test_epochs)
        except TableError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise TableError(f"{self.kind}: {self.path.name} has an incomplete record for this cell on {dataset} "
                                 f"at {epochs} epochs ({type(exc).__name__}: {str(exc)[:200]})", "missing-entry") from None

    def _evaluate(self, arch, dataset, epochs, seed, test_epochs) -> TableRecord:
        cell = self.cell(arch)
        key = str(dataset).strip().lower()
        if key not in API_DATASET:
            raise TableError(f"{self.kind}: no table for dataset {dataset!r}; choose {', '.join(API_DATASET)}")
        name = API_DATASET[key]
        index = self.api.query_index_by_arch(str(cell))
        if index is None or index < 0:
            raise TableError(f"{self.kind}: {cell} is not in {self.path.name}", "missing-entry")
        hps = {str(h) for h in self.api.avaliable_hps}
        epochs = int(epochs)
        if str(epochs) in hps:
            hp, iepoch = str(epochs), None
        elif "200" in hps and 1 <= epochs < 200:
            hp, iepoch = "200", epochs - 1  # epoch N of the 200-epoch schedule
        else:
            raise TableError(f"{self.kind}: no results for {epochs} epochs; the table has schedules of "
                                 f"{', '.join(sorted(hps, key=int))} epochs (and every epoch of the 200-epoch one)",
                                 "missing-epoch")
        results, seeds = self._results(index, hp, name, cell)
        if seed is not None and int(seed) not in seeds:
            raise TableError(f"{self.kind}: no trial with seed {seed} for {cell} on {name} (hp={hp}); "
                                 f"the table has seeds {seeds}, or give no seed for their mean", "missing-seed")
        pick = False if seed is None else int(seed)
        train = results.get_metrics(name, "train", iepoch=iepoch, is_random=pick)
        valid = results.get_metrics(name, _VALID_SET[key], iepoch=iepoch, is_random=pick) if _VALID_SET[key] else None
        test = results.get_metrics(name, _TEST_SET[key], iepoch=iepoch, is_random=pick)
        epochs_run = train["iepoch"] + 1
        seconds = None
        if train.get("all_time") is not None:
            per_eval = (valid or test).get("all_time")
            seconds = train["all_time"] + (per_eval / epochs_run if per_eval is not None else 0.0)
        what = f"{self.path.name}: {cell} on {name} (hp={hp}, seed {seed})"
        valid_acc = None if valid is None else number(valid["accuracy"], f"{what}: the validation accuracy", *ACCURACY)
        test_acc, extra = number(test["accuracy"], f"{what}: the test accuracy", *ACCURACY), {}
        if test_epochs is not None and int(test_epochs) != epochs:
            try:
                final, _ = self._results(index, str(int(test_epochs)), name, cell)
                test_acc = number(final.get_metrics(name, _TEST_SET[key], iepoch=None, is_random=False)["accuracy"],
                                  f"{what}: the {test_epochs}-epoch test accuracy")
            except (TableError, KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                test_acc, extra["test_missing"] = None, str(exc)[:300]
        cost = self.api.get_cost_info(index, name, hp=hp)
        return TableRecord(arch=str(cell), dataset=key, epochs=epochs, seed=seed,
                           valid_acc=valid_acc, test_acc=test_acc, seconds=seconds,
                           params=int(round(cost["params"] * 1e6)), flops=int(round(cost["flops"] * 1e6)),
                           source=f"{self.kind}:{self.path.name} hp={hp}",
                           extra={"index": int(index), "train_acc": float(train["accuracy"]), "seeds": seeds,
                                  **extra})

    def _results(self, index: int, hp: str, name: str, cell):
        """The API's results of one architecture and schedule, with the seeds it has for `name`."""
        try:
            results = self.api.query_meta_info_by_index(index, hp)
        except (KeyError, IndexError, ValueError) as exc:  # the APIs' words for an entry or a schedule missing
            if index not in getattr(self.api, "arch2infos_dict", {index: None}):
                raise TableError(f"{self.kind}: {self.path.name} has no record of {cell}", "missing-entry") from None
            raise TableError(f"{self.kind}: {self.path.name} has no {hp}-epoch record of {cell} ({exc})",
                                 "missing-epoch") from None
        seeds = list(results.get_dataset_seeds(name)) if name in results.get_dataset_names() else []
        if not seeds:
            raise TableError(f"{self.kind}: {self.path.name} has no {name} results for {cell} (hp={hp})",
                                 "missing-entry")
        return results, seeds

