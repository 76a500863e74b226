"""A tabular benchmark as the search loop's evaluator: trials answered from the table.

`TableEvaluator` adapts a :class:`~nader.search.evaluators.tabular.TabularEvaluator` to the
loop's interface (`nader.search.evaluator.Evaluator`). Each seed of a trial is one lookup,
answered at once: the benchmark's validation accuracy at the epoch budget, its test accuracy
and its simulated training time (``seconds``), which the store sums per architecture and the
report accumulates into its time axis. An architecture the table cannot answer (outside the
space, absent from the table, a seed it lacks) comes back as a ``failed`` seed whose error says
why; the search goes on. A process opens a benchmark file once while it is unchanged.

The search's ``cifar10`` reads NB201's ``cifar10-valid`` results (trained on 25k images,
validated on the other 25k), as training would (`SEARCH_TRAINING_SETS`).
"""
from __future__ import annotations

import collections
from pathlib import Path
from typing import List

from ..evaluator import SEARCH_TRAINING_SETS, Evaluator, SeedOutcome, Trial
from .tabular import EvaluatorError, TabularEvaluator, open_evaluator


_OPENED: dict = {}  # (spec, size, mtime) -> TabularEvaluator


def _opened(spec: str) -> TabularEvaluator:
    """The evaluator of a benchmark file, opened once per process while the file is unchanged:
    the official APIs take seconds to index a table (NATS-Bench copies it whole), and a
    comparison of strategies runs many searches on one table."""
    kind, _, path = spec.partition(":")
    try:
        st = Path(path).expanduser().stat()
        key = (spec, st.st_size, st.st_mtime_ns)
    except OSError:
        return open_evaluator(spec)  # its error says what is wrong with the path
    if key not in _OPENED:
        _OPENED.clear()  # one table at a time: they are large
        _OPENED[key] = open_evaluator(spec)
    return _OPENED[key]


class TableEvaluator(Evaluator):
    capacity = 1

    def __init__(self, table: TabularEvaluator, dataset: str, epochs: int):
        self.table, self.epochs = table, int(epochs)
        self.dataset = SEARCH_TRAINING_SETS.get(dataset, dataset)
        self.ready: collections.deque = collections.deque()

    @classmethod
    def open(cls, spec: str, dataset: str, epochs: int) -> "TableEvaluator":
        return cls(_opened(spec), dataset, epochs)

    def submit(self, trial: Trial) -> None:
        for seed in trial.seeds:
            self.ready.append(self.lookup(trial, seed))

    def lookup(self, trial: Trial, seed: int) -> SeedOutcome:
        try:
            self.table.cell(trial.text)
        except EvaluatorError as exc:
            return SeedOutcome(trial.arch_id, seed, "failed", error=str(exc), error_kind="not-in-space")
        try:
            rec = self.table.evaluate(trial.text, self.dataset, trial.epochs or self.epochs, seed)
        except EvaluatorError as exc:
            return SeedOutcome(trial.arch_id, seed, "failed", error=str(exc), error_kind="not-in-table")
        return SeedOutcome(trial.arch_id, seed, "ok", rec.valid_acc, rec.test_acc, rec.seconds, rec.epochs)

    def pending(self) -> int:
        return len(self.ready)

    def wait(self, timeout=None) -> List[SeedOutcome]:
        out = list(self.ready)
        self.ready.clear()
        return out
