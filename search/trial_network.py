"""The network a trial was searched with, whoever evaluated it: the runtime's training, a table or a
Python objective.

Skeleton, dataset and depths are the run's settings (`search.config` in the store): they are part of
a run's identity, which a resume may not change, so every trial of a run shares them. The widths are
the trial's own, fitted to the budget when it was proposed (`archs.widths`). Where the runtime trained
the trial, its job records all of them (what the worker built), and those are taken. With them a
trial rebuilds at the parameter count it was searched at, not at the widths a new fit would give
(`nadc a.nad --network nas-bench-201` fits the skeleton's budget anew: 1.5 M parameters' worth).

`network_line(rec, net)` puts them in the architecture's text as its network line
(`nader.compiler.network_header`), which `nadc FILE --emit torch|onnx` reads.
"""
from __future__ import annotations

from typing import Optional

from nader.compiler.datasets import dataset_info
from nader.compiler.errors import BuildError
from nader.compiler.network_header import header_line
from nader.compiler.plan import resolve_depths
from nader.compiler.skeletons import skeleton_info

from . import records
from .tables.benchmark import KINDS as BENCHMARK_KINDS
from .tables.derived import KIND as DERIVED_KIND

PYTHON = "python"  # the stored evaluator of a study evaluated by a Python function (study.PYTHON_EVALUATOR)
TRAINING = "training"
TABLE_KINDS = (*BENCHMARK_KINDS, DERIVED_KIND)


def evaluator_kind(config: dict) -> str:
    """How a run's trials were evaluated: training (the runtime), table (a tabular benchmark),
    python (a Python objective), or a registered evaluator's name."""
    spec = config.get("evaluator")
    if not spec:
        return TRAINING
    kind = str(spec).partition(":")[0].strip().lower()
    return "table" if kind in TABLE_KINDS else kind


def network_of(config: dict, rec: dict, job=None) -> Optional[dict]:
    """`{skeleton, dataset, depths, widths, classes, input_size}` of a trial's network (a training
    job's where given), or None when the trial has none (invalid, over the budget, a duplicate: no
    widths were fitted) or the stored settings no longer name a known skeleton or dataset."""
    skeleton = job.skeleton if job is not None else config.get("skeleton") or "nb201"
    dataset = job.dataset if job is not None else config.get("dataset") or "digits"
    depths = job.depths if job is not None else config.get("depths")
    widths = (job.widths if job is not None else None) or rec.get("widths")
    if not widths or not isinstance(widths, list):
        return None
    try:
        data = dataset_info(dataset)
        depths = list(resolve_depths(skeleton_info(skeleton), depths))
    except BuildError:
        return None
    return {"skeleton": skeleton, "dataset": dataset, "depths": depths, "widths": [int(w) for w in widths],
            "classes": data.num_classes, "input_size": data.input_size}


def network_line(rec: dict, net: Optional[dict], extra: str = "") -> str:
    """The record's text as `nader-search best` prints it (its comment line first), with `extra`
    comment lines and the network line after it; without a network, the text alone."""
    head, _, body = records.best_text(rec).partition("\n")
    line = header_line(**net) if net is not None else ""
    return head + "\n" + extra + line + body


__all__ = ["PYTHON", "TRAINING", "evaluator_kind", "network_line", "network_of"]
