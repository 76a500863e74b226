"""A table by its ``--evaluator`` spec (`open_table`), and the search loop's evaluator over it:
trials answered from the table.

`TableEvaluator` adapts a :class:`~nader.search.tables.base.Table` to the
loop's interface (`nader.search.evaluator.Evaluator`). Each seed of a trial is one lookup,
answered at once, as NAS-Bench-201 and NATS-Bench compare strategies: the search's signal is
the validation accuracy at the epoch budget (the preset's: ``nb201-12`` reads the 12-epoch
schedule, NATS-Bench's ``hp="12"``); the test accuracy recorded is the 200-epoch one
(`FINAL_EPOCHS`, the mean over the table's trials), the figure the benchmarks report for the
architecture best by validation, when the table has that schedule (else the budget's own); and
``seconds`` is the simulated training time at the budget, which the store sums per architecture,
the report accumulates into its time axis and ``--time-limit sim:N`` stops on
(`SearchStore.seconds_used`). An architecture the table cannot answer (outside the space, an entry, an
epoch, a seed or a number missing) comes back as a ``failed`` seed whose error says why and
whose ``error_kind`` says what (`base.TableError.kind`); the search goes on. A process
opens a benchmark file once while it is unchanged.

The search's ``cifar10`` reads NB201's ``cifar10-valid`` results (trained on 25k images,
validated on the other 25k), as training would (`SEARCH_TRAINING_SETS`).
"""
from __future__ import annotations

import collections
from pathlib import Path
from typing import List, Optional

from ..evaluator import SEARCH_TRAINING_SETS, Evaluator, SeedOutcome, Trial
from .base import Table, TableError
from .benchmark import BenchmarkTable
from .derived import FileTable

FINAL_EPOCHS = 200  # the schedule whose test accuracy NAS-Bench-201 and NATS-Bench report

_OPENED: dict = {}  # (spec, table map, size, mtime) -> table


def open_table(spec: str, table_map: Optional[dict] = None) -> Table:
    """``nats-bench:PATH``, ``nas-bench-201:PATH`` or ``table:PATH`` (the form ``--evaluator``
    takes; `table_map` maps the derived table's columns, see `derived.py`)."""
    kind, sep, path = (spec or "").partition(":")
    if not sep or not path:
        raise TableError(f"expected nats-bench:PATH, nas-bench-201:PATH or table:PATH, not {spec!r}")
    if kind.strip().lower() == "table":
        return FileTable(path, table_map)
    return BenchmarkTable(kind.strip().lower(), path)


def opened(spec: str, table_map=None) -> Table:
    """The table of a benchmark file, opened once per process while the file is unchanged:
    the official APIs take seconds to index a table (NATS-Bench copies it whole), and a
    comparison of strategies runs many searches on one table."""
    kind, _, path = spec.partition(":")
    try:
        st = Path(path).expanduser().stat()
        key = (spec, tuple(sorted((table_map or {}).items())), st.st_size, st.st_mtime_ns)
    except OSError:
        return open_table(spec, table_map)  # its error says what is wrong with the path
    if key not in _OPENED:
        _OPENED.clear()  # one table at a time: they are large
        _OPENED[key] = open_table(spec, table_map)
    return _OPENED[key]


class TableEvaluator(Evaluator):
    capacity = 1

    def __init__(self, table: Table, dataset: str, epochs: int):
        self.table, self.epochs = table, int(epochs)
        self.dataset = SEARCH_TRAINING_SETS.get(dataset, dataset)
        self.ready: collections.deque = collections.deque()
        has_final = FINAL_EPOCHS in self.table.test_schedules(self.dataset)
        self.test_epochs = FINAL_EPOCHS if has_final and self.epochs != FINAL_EPOCHS else None
        self.warnings = [] if has_final or self.epochs == FINAL_EPOCHS else [
            f"the table has no {FINAL_EPOCHS}-epoch test accuracy; the test accuracy recorded is at "
            f"{self.epochs} epochs"]

    @classmethod
    def open(cls, spec: str, dataset: str, epochs: int, table_map=None) -> "TableEvaluator":
        return cls(opened(spec, table_map), dataset, epochs)

    def submit(self, trial: Trial) -> None:
        for seed in trial.seeds:
            self.ready.append(self.lookup(trial, seed))

    def lookup(self, trial: Trial, seed: int) -> SeedOutcome:
        try:
            rec = self.table.evaluate(trial.text, self.dataset, trial.epochs or self.epochs, seed,
                                      test_epochs=self.test_epochs)
        except TableError as exc:
            return SeedOutcome(trial.arch_id, seed, "failed", error=str(exc), error_kind=exc.kind)
        return SeedOutcome(trial.arch_id, seed, "ok", rec.valid_acc, rec.test_acc, rec.seconds, rec.epochs,
                           error=rec.extra.get("test_missing"))

    def pending(self) -> int:
        return len(self.ready)

    def wait(self, timeout=None) -> List[SeedOutcome]:
        out = list(self.ready)
        self.ready.clear()
        return out
