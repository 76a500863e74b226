"""The pruner interface, after Optuna's `BasePruner`: whether a trial stops early, decided from
what every trial reported (`Reports`).

One rule per file (`successive_halving.py`, `hyperband.py`, `median.py`), each used by both of
the search's drivers, so there is one pruning code path:

* an objective's `arch.report(value, step)` / `arch.should_prune()` (asynchronous: each report
  is judged against the ones made so far, as Optuna's pruners judge them), through `prune`;
* the runtime's own training under `--fidelity` (synchronous: whole rungs, retrained at the next
  budget; `nader.search.fidelity.Scheduler`), through `kept`, the same ranking `prune` applies.

A trial is a key (arch_id, seed); its value at a step is what it reported there.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Hashable, List, Optional, Sequence, Tuple

from .reports import Reports


class Pruner(ABC):
    """Decides from `Reports` whether a trial stops now. Subclasses set `name` and `spec`."""

    name = "pruner"

    @abstractmethod
    def prune(self, reports: Reports, trial: Hashable, step: int) -> bool:
        """Whether `trial`, which has just reported at `step`, should stop."""

    @abstractmethod
    def spec(self) -> dict:
        """Its name and parameters (JSON), stored with the run: `make_pruner(spec)` rebuilds it."""

    def check(self, max_step: Optional[int]) -> None:
        """Refuse what this pruner cannot run with (ConfigError); `max_step` is the study's `epochs`."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.spec().items() if k != "name")
        return f"{type(self).__name__}({args})"


def promoted(entrants: int, eta: int) -> int:
    """How many of a rung's `entrants` go on: the top 1/eta, at least one (Hyperband's rule)."""
    return max(1, entrants // eta) if entrants else 0


def kept(members: Sequence[Tuple[Hashable, float]], eta: int, direction: str = "max",
         entrants: Optional[int] = None) -> List[Hashable]:
    """The members (key, value) that go on from a rung: the best `promoted(entrants)` of them
    (entrants: those that entered the rung, failed ones too; default all members), ties to the
    earlier key. NaN is worst. The one ranking of successive halving and Hyperband."""
    sign = -1.0 if direction == "max" else 1.0
    ranked = sorted(members, key=lambda m: (math.isnan(m[1]), sign * m[1] if not math.isnan(m[1]) else 0.0, m[0]))
    return [key for key, _ in ranked[:promoted(len(members) if entrants is None else entrants, eta)]]


def worse(a: float, b: float, direction: str) -> bool:
    """Whether `a` is strictly worse than `b` in `direction` (NaN is worse than anything)."""
    if math.isnan(a):
        return True
    return a < b if direction == "max" else a > b
