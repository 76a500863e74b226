"""Executors: run a list of jobs here, in a pool of local worker processes (`pool.py`), or on
Ray (`ray_executor.py`).

All three share one contract (`dispatch.py`): ``map(jobs, on_result=None, on_event=None) ->
list[Result]`` in the jobs' order, built on ``start(on_event=None) -> Dispatch``, a stream that
takes jobs one at a time and hands back results as they finish (the search loop proposes work on
demand with it). Every failure of a job (build error, NaN, out of memory, a killed worker, a Ray
task error) becomes a failed :class:`Result`; nothing a job does stops the caller.
``on_result(result)`` is called as each job finishes (the runner commits it to the store);
``on_event(event)`` receives the trainer's start/epoch events where the executor can deliver
them (in-process and pool; for Ray the runner polls the run store instead).
"""
from __future__ import annotations

import collections
from typing import Callable, Optional, Sequence

from .dispatch import Dispatch, EventCb, Executor
from .errors import ConfigError
from .jobs import run_job
from .pool import PoolExecutor, default_devices
from .ray_executor import RayExecutor

__all__ = ["Dispatch", "Executor", "InProcessExecutor", "PoolExecutor", "RayExecutor", "default_devices",
           "make_executor"]


class InProcessExecutor(Executor):
    """Runs jobs one after another in this process (the reference for the others)."""

    name = "inprocess"

    def __init__(self, device: Optional[str] = None, callbacks: Sequence[Callable[[dict], None]] = ()):
        self.device = device
        self.callbacks = list(callbacks)

    def start(self, *, on_event=None):
        return _InProcessDispatch(self, on_event)


class _InProcessDispatch(Dispatch):
    capacity = 1

    def __init__(self, executor: InProcessExecutor, on_event: EventCb):
        super().__init__()
        self.executor = executor
        self.callbacks = ([on_event] if on_event else []) + executor.callbacks
        self.queue: collections.deque = collections.deque()

    def submit(self, job):
        ticket = self._ticket()
        self.queue.append((ticket, job))
        return ticket

    def pending(self):
        return len(self.queue)

    def wait(self, timeout=None):
        if not self.queue:
            return []
        ticket, job = self.queue.popleft()
        return [(ticket, run_job(job, device=self.executor.device, callbacks=self.callbacks))]


def make_executor(kind: str = "inprocess", *, workers: Optional[int] = None, address: Optional[str] = None,
                  device: Optional[str] = None, timeout: Optional[float] = None,
                  trials_per_gpu: Optional[int] = None) -> Executor:
    kind = (kind or "inprocess").lower()
    if kind in ("inprocess", "in-process", "local"):
        return InProcessExecutor(device=device)
    if kind == "pool":
        if device and device.startswith("cuda"):
            devices = [device if ":" in device else "cuda:0"]  # one GPU: the pool packs trials onto it
        else:
            devices = [device] * (workers or 1) if device else None
        return PoolExecutor(workers=workers, devices=devices, timeout=timeout, trials_per_device=trials_per_gpu)
    if kind == "ray":
        return RayExecutor(address=address, num_cpus=workers if not address else None)
    raise ConfigError(f"unknown executor {kind!r}; choose inprocess, pool or ray")
