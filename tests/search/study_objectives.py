"""Objectives for the parallel study tests: NAS-Bench-201 cells scored without training, light to
import (worker processes and Ray tasks import this module to run them, so no torch here).

Each is a small callable class, so that cloudpickle ships it by reference and a test can give it
parameters (how long to sleep, where a worker leaves its markers)."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import nader.search as ns


def score(cell: str) -> float:
    """A deterministic value of a cell (convolutions are good, `none` is bad)."""
    return 10.0 * cell.count("conv_3x3") + 5.0 * cell.count("conv_1x1") - 3.0 * cell.count("none")


class Sleep:
    """Sleeps, then scores the cell; keeps when it ran and in which process."""

    def __init__(self, seconds: float = 0.0, slow_odd: float = 0.0):
        self.seconds, self.slow_odd = seconds, slow_odd

    def __call__(self, arch):
        start = time.time()
        time.sleep(self.seconds + (self.slow_odd if arch.number % 2 else 0.0))
        arch.set_user_attr("ran", [start, time.time()])
        arch.set_user_attr("pid", os.getpid())
        return score(arch.cell)


class KillOnce:
    """The worker running an architecture of `once` kills itself (SIGKILL) the first time, leaving
    a marker in `folder` so that the retry scores it; one of `always` kills itself every time."""

    def __init__(self, folder: str, once=(), always=()):
        self.folder, self.once, self.always = folder, tuple(once), tuple(always)

    def __call__(self, arch):
        marker = Path(self.folder) / f"killed-{arch.number}"
        if arch.number in self.always or (arch.number in self.once and not marker.exists()):
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return score(arch.cell)


class Hang:
    """Sleeps far longer than any trial timeout for architecture `number`."""

    def __init__(self, number: int):
        self.number = number

    def __call__(self, arch):
        if arch.number == self.number:
            time.sleep(120)
        return score(arch.cell)


class Epochs:
    """A training loop that reports the cell's score, rising per epoch, and stops when pruned;
    architecture `hang` hangs instead (a trial timeout's)."""

    def __init__(self, epochs: int = 9, pause: float = 0.0, hang: int = -1):
        self.epochs, self.pause, self.hang = epochs, pause, hang

    def __call__(self, arch):
        if arch.number == self.hang:
            time.sleep(120)
        value = 0.0
        for epoch in range(1, self.epochs + 1):
            time.sleep(self.pause)
            value = score(arch.cell) + epoch + arch.number / 1000  # no ties between trials
            arch.report(value, epoch)
            if arch.should_prune():
                arch.set_user_attr("stopped_at", epoch)
                raise ns.TrialPruned()
        return value


class Workers:
    """Scores the cell after `seconds`, leaving a pid file in `folder` (the kill tests' workers)."""

    def __init__(self, folder: str, seconds: float):
        self.folder, self.seconds = folder, seconds

    def __call__(self, arch):
        (Path(self.folder) / f"worker-{os.getpid()}").write_text(str(arch.number))
        time.sleep(self.seconds)
        return score(arch.cell)
