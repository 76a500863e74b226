"""What trials reported while they ran (`arch.report(value, step)`): the history pruners read.

The study's driver holds one `Reports` (the one writer: it stores each report in the run,
`BaseStore.add_reports`, and reloads them on resume). Reports arrive from worker threads, from
worker processes through their pipe and from Ray tasks through a mailbox, so every method takes
the lock. A trial is a key (arch_id, seed).
"""
from __future__ import annotations

import bisect
import math
import threading
from typing import Dict, Hashable, Iterable, List, Optional, Tuple


class Reports:
    def __init__(self, direction: str = "max"):
        self.direction = direction
        self.values: Dict[Hashable, Dict[int, float]] = {}
        self.order: Dict[Hashable, List[int]] = {}  # each trial's steps, sorted (`first_from` bisects)
        self.complete: set = set()  # trials that finished ok: the median rule compares with these
        self.unsaved: List[tuple] = []  # (arch_id, seed, step, value) not yet in the store
        self.lock = threading.RLock()

    def load(self, rows: Iterable[tuple], complete: Iterable[Hashable]) -> None:
        """What the run's store holds: (arch_id, seed, step, value) rows, and the finished trials."""
        with self.lock:
            for arch_id, seed, step, value in rows:
                self._put((arch_id, seed), int(step), math.nan if value is None else float(value))
            self.complete.update(complete)

    def _put(self, trial: Hashable, step: int, value: float) -> None:
        self.values.setdefault(trial, {})[step] = value
        bisect.insort(self.order.setdefault(trial, []), step)

    def add(self, trial: Tuple[int, int], step: int, value: float) -> bool:
        """Record a report; a second report at the same step is ignored (False), as Optuna does."""
        with self.lock:
            if step in self.values.get(trial, ()):
                return False
            self._put(trial, step, value)
            self.unsaved.append((trial[0], trial[1], step, None if math.isnan(value) else value))
            return True

    def finish(self, trial: Hashable, ok: bool) -> None:
        with self.lock:
            if ok:
                self.complete.add(trial)

    def take_unsaved(self) -> List[tuple]:
        with self.lock:
            out, self.unsaved = self.unsaved, []
            return out

    def trials(self) -> List[Hashable]:
        with self.lock:
            return list(self.values)

    def steps(self, trial: Hashable) -> Dict[int, float]:
        with self.lock:
            return dict(self.values.get(trial, {}))

    def first_from(self, trial: Hashable, step: int) -> Optional[Tuple[int, float]]:
        """(step, value) of the trial's first report at `step` or later, or None."""
        with self.lock:
            steps = self.order.get(trial, ())
            i = bisect.bisect_left(steps, step)
            return (steps[i], self.values[trial][steps[i]]) if i < len(steps) else None

    def best_until(self, trial: Hashable, step: int) -> Optional[float]:
        """The trial's best value reported up to `step` (NaN when its only values are NaN)."""
        values = [v for s, v in self.steps(trial).items() if s <= step]
        finite = [v for v in values if not math.isnan(v)]
        if not finite:
            return math.nan if values else None
        return max(finite) if self.direction == "max" else min(finite)
