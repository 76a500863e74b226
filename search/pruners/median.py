"""The median rule (Golovin et al. 2017, Google Vizier; Optuna's `MedianPruner`): stop a trial
whose best value so far is worse than the median of the finished trials' values at the same step.

Only for an objective's reports: the runtime's `--fidelity` rungs promote by rank
(`successive_halving.py`, `hyperband.py`)."""
from __future__ import annotations

import math
import statistics
from typing import Hashable

from nader.runtime.errors import ConfigError

from .base import Pruner, worse
from .reports import Reports


class MedianPruner(Pruner):
    name = "median"

    def __init__(self, n_startup_trials: int = 5, n_warmup_steps: int = 0):
        for key, value in (("n_startup_trials", n_startup_trials), ("n_warmup_steps", n_warmup_steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"pruner {key}: expected an integer of at least 0, not {value!r:.40}")
        self.n_startup_trials, self.n_warmup_steps = n_startup_trials, n_warmup_steps

    def spec(self) -> dict:
        return {"name": self.name, "n_startup_trials": self.n_startup_trials, "n_warmup_steps": self.n_warmup_steps}

    def prune(self, reports: Reports, trial: Hashable, step: int) -> bool:
        if step < self.n_warmup_steps:
            return False
        finished = [t for t in reports.complete if t != trial]
        if len(finished) < self.n_startup_trials:
            return False
        mine = reports.best_until(trial, step)
        if mine is None:
            return False
        if math.isnan(mine):
            return True
        others = [v for v in (reports.steps(t).get(step) for t in finished) if v is not None and not math.isnan(v)]
        if not others:
            return False
        return worse(mine, statistics.median(others), reports.direction)
