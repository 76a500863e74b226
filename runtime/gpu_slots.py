"""Several trials per GPU: how many, and on which device each pool worker runs.

A NAS-Bench-201 network leaves most of a modern GPU idle, so the pool runs K trials on one
device, one worker process each. K comes from two limits:

* memory: the device's free memory, less a headroom, divided by one trial's footprint. The
  footprint is measured, not guessed: the first worker on a device reports after each epoch
  what PyTorch's caching allocator reserved at its peak (``torch.cuda.max_memory_reserved``)
  and what the device has free (``torch.cuda.mem_get_info``); the pool adds the memory each
  process holds outside the allocator (CUDA context, cuDNN/cuBLAS handles) and a safety factor;
* the CPU: each trial process needs a core of its own to launch kernels (small networks are
  launch-bound), so K is at most the cores per GPU.

``--trials-per-gpu K`` (``PoolExecutor(trials_per_device=K)``) fixes K and skips the
measurement. Nothing here imports torch at module level, and every figure can be injected, so
the choice is tested without a GPU.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

MIB = 1 << 20
# Memory a CUDA process holds outside PyTorch's allocator: the context, cuDNN and cuBLAS
# handles and workspaces (a few hundred MiB on recent GPUs and CUDA 12).
CUDA_CONTEXT_BYTES = 512 * MIB
HEADROOM = 0.10  # share of the device's memory left free (fragmentation, other processes)
SAFETY = 1.25  # the measured peak is multiplied by this (later epochs and evaluation may peak higher)


@dataclass(frozen=True)
class MemoryReport:
    """What one worker reports after an epoch on a CUDA device (bytes)."""

    free: int  # free memory on the device, all processes counted
    total: int
    peak: int  # this process's peak reserved by the caching allocator

    @classmethod
    def from_event(cls, event: dict) -> Optional["MemoryReport"]:
        try:
            return cls(int(event["cuda_free_bytes"]), int(event["cuda_total_bytes"]), int(event["cuda_peak_bytes"]))
        except (KeyError, TypeError, ValueError):
            return None


def trial_footprint(peak_reserved: int) -> int:
    """Device memory one trial needs, from its measured allocator peak."""
    return int(peak_reserved * SAFETY) + CUDA_CONTEXT_BYTES


def choose_trials_per_device(free: int, total: int, trial_bytes: int, *, running: int = 0,
                             cpus: Optional[int] = None, cap: Optional[int] = None) -> int:
    """How many trials one GPU should run in all: the `running` ones (already counted out of
    `free`) plus as many more as its free memory, less the headroom, holds; at least 1 and at
    most `cpus` (one core per trial process) and `cap`."""
    if trial_bytes <= 0:
        raise ValueError("a trial's footprint must be positive")
    usable = free - HEADROOM * total
    more = max(0, math.floor(usable / trial_bytes))
    k = max(1, running + more)
    for limit in (cpus, cap):
        if limit is not None:
            k = min(k, max(1, int(limit)))
    return max(k, 1 if running == 0 else running)


def cuda_device_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # pragma: no cover - a broken CUDA install counts as none
        return 0


def interleave(per_device: Dict[str, int]) -> List[str]:
    """One entry per worker, devices taking turns, so that the first jobs spread over every GPU."""
    out: List[str] = []
    left = dict(per_device)
    while any(left.values()):
        for dev in per_device:
            if left[dev] > 0:
                out.append(dev)
                left[dev] -= 1
    return out


class DeviceSlots:
    """The pool's plan for CUDA devices: how many workers each device should have.

    With a fixed K every device starts with K workers. With K chosen automatically each device
    starts with one; the first memory report from a device fixes its K (:meth:`observe`), and
    the pool starts the extra workers. ``max_workers`` caps the total over all devices.
    """

    def __init__(self, devices: Sequence[str], fixed: Optional[int] = None, *, cpus: Optional[int] = None,
                 max_workers: Optional[int] = None):
        self.devices = list(devices)
        self.fixed = fixed
        cores = cpus if cpus is not None else (os.cpu_count() or 1)
        self.cpus_per_device = max(1, cores // max(1, len(self.devices)))
        self.max_workers = max_workers
        start = fixed if fixed else 1
        self.target: Dict[str, int] = {d: start for d in self.devices}
        self.decided: Dict[str, bool] = {d: bool(fixed) for d in self.devices}
        self.footprint: Dict[str, int] = {}
        self._clip()

    def _clip(self) -> None:
        """Cut the plan to `max_workers`, devices taking turns (the first devices keep one more)."""
        if self.max_workers is None:
            return
        kept = interleave(self.target)[: max(0, self.max_workers)]
        self.target = {d: kept.count(d) for d in self.devices}

    def initial(self) -> List[str]:
        return interleave({d: n for d, n in self.target.items() if n > 0})

    def total(self) -> int:
        return sum(self.target.values())

    def observe(self, device: str, report: Optional[MemoryReport], running: int) -> int:
        """Take one worker's memory report; return how many workers to add on `device`."""
        if report is None or device not in self.target or self.decided[device]:
            return 0
        self.decided[device] = True
        self.footprint[device] = trial_footprint(report.peak)
        cap = None if self.max_workers is None else self.max_workers - (self.total() - self.target[device])
        k = choose_trials_per_device(report.free, report.total, self.footprint[device], running=running,
                                     cpus=self.cpus_per_device, cap=cap)
        extra = max(0, k - self.target[device])
        self.target[device] = max(self.target[device], k)
        return extra
