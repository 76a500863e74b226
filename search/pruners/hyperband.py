"""Hyperband (Li et al. 2018; Optuna's `HyperbandPruner`): several successive-halving brackets
that start at different rungs, so that some trials are judged early and others only once they
have trained longer. Bracket s = rungs-1 .. 0 (in turn) starts at rung rungs-1-s and takes
ceil(rungs / (s+1) x eta^s) trials.

`--fidelity hyperband` fills the brackets with new architectures in order; an objective's trial
belongs to the bracket its architecture id falls in, cycling through the same sizes, and is
judged only against trials of its bracket, from the bracket's first rung on.
"""
from __future__ import annotations

import math
from typing import Hashable, Optional

from nader.runtime.errors import ConfigError

from .successive_halving import SuccessiveHalvingPruner


class HyperbandPruner(SuccessiveHalvingPruner):
    name = "hyperband"

    def __init__(self, min_resource: Optional[int] = None, max_resource: Optional[int] = None,
                 reduction_factor: int = 3):
        if max_resource is None:
            raise ConfigError("pruner hyperband needs the most steps a trial reports: give max_resource (or "
                              "epochs= to create_study)")
        super().__init__(min_resource=min_resource, reduction_factor=reduction_factor, max_resource=max_resource)

    def shape(self, bracket: int) -> tuple:
        s = self.top - bracket % (self.top + 1)
        return self.top - s, math.ceil((self.top + 1) / (s + 1) * self.eta ** s)

    def bracket_of(self, trial: Hashable) -> int:
        number = trial[0] if isinstance(trial, tuple) else int(trial)
        sizes = [self.shape(b)[1] for b in range(self.top + 1)]
        position = number % sum(sizes)
        for bracket, size in enumerate(sizes):
            if position < size:
                return bracket
            position -= size
        return self.top  # unreachable: the sizes sum to the cycle

    def first_rung(self, trial: Hashable) -> int:
        return self.shape(self.bracket_of(trial))[0]
