"""Successive halving (Jamieson & Talwalkar 2016; asynchronous as ASHA, Li et al. 2020, and
Optuna's `SuccessiveHalvingPruner`): rungs at min_resource x eta^k steps; at each rung only the
top 1/eta of the trials that reached it go on.

`--fidelity successive-halving` (the runtime's training) promotes whole rungs with `kept`;
an objective's report is judged by `prune` with the same `kept`, against the trials that have
reached that rung so far.
"""
from __future__ import annotations

import math
from typing import Hashable, List, Optional, Sequence, Tuple

from nader.runtime.errors import ConfigError

from .base import Pruner, kept
from .reports import Reports


def ladder(full: int, minimum: Optional[int], eta: int) -> List[int]:
    """The budgets (epochs) of the rungs, lowest first; the last is `full`. Without a minimum:
    ceil(full / eta**2), three rungs where the full budget allows."""
    if eta < 2:
        raise ConfigError(f"eta must be at least 2, not {eta}")
    low = minimum if minimum is not None else max(1, math.ceil(full / eta ** 2))
    if not 1 <= low <= full:
        raise ConfigError(f"min-epochs must be between 1 and the full budget ({full} epochs), not {low}")
    budgets = []
    while low < full:
        budgets.append(low)
        low *= eta
    return budgets + [full]


def _whole(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"pruner {name}: expected an integer of at least {least}, not {value!r:.40}")
    return value


class SuccessiveHalvingPruner(Pruner):
    name = "successive-halving"

    def __init__(self, min_resource: Optional[int] = None, reduction_factor: int = 3,
                 max_resource: Optional[int] = None):
        self.eta = _whole(reduction_factor, "reduction_factor", 2)
        self.min_resource = None if min_resource is None else _whole(min_resource, "min_resource", 1)
        self.max_resource = None if max_resource is None else _whole(max_resource, "max_resource", 1)
        # with the full budget known, the ladder ends there (the runtime's rungs); else it grows on
        self.budgets: Optional[Tuple[int, ...]] = (
            tuple(ladder(self.max_resource, self.min_resource, self.eta)) if self.max_resource else None)

    def spec(self) -> dict:
        return {"name": self.name, "min_resource": self.min_resource, "reduction_factor": self.eta,
                "max_resource": self.max_resource}

    # ------------------------------------------------------------------ the rungs
    @property
    def top(self) -> int:
        return len(self.budgets) - 1

    def shape(self, bracket: int) -> tuple:
        """(first rung, architectures entering) of a bracket of the runtime's rungs: every one
        starts at rung 0 with eta^(rungs-1) members."""
        return 0, self.eta ** self.top

    def rung_steps(self, up_to: int) -> List[int]:
        """The rungs' steps up to `up_to`."""
        if self.budgets is not None:
            return [b for b in self.budgets if b <= up_to]
        out, step = [], self.min_resource or 1
        while step <= up_to:
            out.append(step)
            step *= self.eta
        return out

    def kept(self, members: Sequence[Tuple[Hashable, float]], entrants: Optional[int] = None,
             direction: str = "max") -> List[Hashable]:
        return kept(members, self.eta, direction, entrants)

    # ------------------------------------------------------------------ brackets (Hyperband's)
    def first_rung(self, trial: Hashable) -> int:
        return 0

    def bracket_of(self, trial: Hashable) -> int:
        return 0

    # ------------------------------------------------------------------ an objective's reports
    def prune(self, reports: Reports, trial: Hashable, step: int) -> bool:
        bracket, first = self.bracket_of(trial), self.first_rung(trial)
        for rung, resource in enumerate(self.rung_steps(step)):
            reached = reports.first_from(trial, resource)
            if rung < first or reached is None or reached[0] != step:
                continue  # each rung is judged once, at the report that reached it
            members = []
            for other in reports.trials():
                at = reports.first_from(other, resource)
                if at is not None and self.bracket_of(other) == bracket:
                    members.append((other, at[1]))
            if trial not in self.kept(members, direction=reports.direction):
                return True
        return False
