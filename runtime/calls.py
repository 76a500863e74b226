"""Calls: a function run by workers that may ask its caller questions while it runs.

The runtime's jobs are data (`Job`: what to build and train); a *call* is a function, a
Python objective's evaluation (`nader.search.objective.ObjectiveCall`), run by

* ``inline``: this thread, one at a time (the reference);
* ``thread``: daemon threads, K at once (no pickling; a thread cannot be killed, so no timeout);
* ``process``: the process pool's spawned workers (`pool.PoolExecutor.start_calls`), the function
  shipped with cloudpickle; a worker that dies fails only its call, and a timeout kills it;
* ``ray``: Ray tasks with the resources each call asks for (`ray_executor.RayExecutor.start_calls`),
  the function shipped by Ray's cloudpickle; a cancelled or crashed task fails only its call.

Each is a `Dispatch` (`submit(fn) -> ticket`, `wait(timeout) -> [(ticket, value)]`, `idle`,
`close`). A call's value is what the function returned, or a `CallFailure` (killed, timeout,
exception) when it did not return. While it runs the function holds a channel:
``channel.ask(message)`` hands `message` to the caller's `on_ask` (in the caller's process;
from a worker thread, that thread) and returns its reply.
"""
from __future__ import annotations

import math
import queue
import threading
import time
from typing import Any, Callable, Optional

from .dispatch import CallFailure, Dispatch
from .errors import ConfigError
from .jobs import E_EXCEPTION
from .pool import PoolExecutor
from .ray_executor import RayExecutor

OnAsk = Callable[[Any], Any]
CALL_EXECUTORS = ("thread", "process", "ray")


class DirectChannel:
    """A channel in the caller's process: questions go straight to `on_ask`."""

    def __init__(self, on_ask: OnAsk):
        self.on_ask = on_ask

    def ask(self, message):
        return self.on_ask(message)


class InlineCalls(Dispatch):
    """One call at a time, run by `wait` in this thread: exceptions other than the function's own
    handling (Ctrl-C) reach the caller."""

    capacity = 1

    def __init__(self, on_ask: OnAsk):
        super().__init__()
        self.channel = DirectChannel(on_ask)
        self.queue: list = []

    def submit(self, fn) -> int:
        ticket = self._ticket()
        self.queue.append((ticket, fn))
        return ticket

    def pending(self) -> int:
        return len(self.queue)

    def wait(self, timeout=None):
        if not self.queue:
            return []
        ticket, fn = self.queue.pop(0)
        return [(ticket, fn(self.channel))]


class ThreadCalls(Dispatch):
    """Up to `workers` calls at once, one daemon thread each (the loop submits no more than
    `idle()`). Interrupted, the running calls are abandoned: their threads finish on their own
    (a thread cannot be stopped) and what they return is dropped."""

    def __init__(self, workers: int, on_ask: OnAsk):
        super().__init__()
        self.capacity = workers
        self.channel = DirectChannel(on_ask)
        self.done: "queue.Queue" = queue.Queue()
        self.running = 0
        self.closed = False

    def submit(self, fn) -> int:
        ticket = self._ticket()
        self.running += 1
        threading.Thread(target=self._run, args=(ticket, fn), daemon=True, name=f"nader-call-{ticket}").start()
        return ticket

    def _run(self, ticket: int, fn) -> None:
        t0 = time.monotonic()
        try:
            value = fn(self.channel)
        except BaseException as exc:  # noqa: BLE001 - reported as the call's failure, never lost
            value = CallFailure(E_EXCEPTION, f"{type(exc).__name__}: {exc}"[:500], time.monotonic() - t0)
        if not self.closed:
            self.done.put((ticket, value))

    def pending(self) -> int:
        return self.running

    def wait(self, timeout=None):
        if not self.running:
            return []
        try:
            out = [self.done.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                out.append(self.done.get_nowait())
            except queue.Empty:
                break
        self.running -= len(out)
        return out

    def close(self, abort=False):
        self.closed = True
        self.running = 0


def make_calls(kind: str, *, workers: int, on_ask: OnAsk, timeout: Optional[float] = None,
               address: Optional[str] = None, resources: Optional[dict] = None) -> tuple:
    """(executor or None, dispatch) running calls on `kind`: inline (workers 1, no executor named),
    thread, process or ray. The executor is closed by the caller after the dispatch."""
    if kind is None or kind == "inline":
        return None, InlineCalls(on_ask)
    if kind == "thread":
        if timeout is not None:
            raise ConfigError("a thread cannot be stopped, so trial_timeout cannot be enforced on executor='thread': "
                              "use executor='process' or 'ray', which kill a trial that runs too long")
        return None, ThreadCalls(workers, on_ask)
    if kind == "process":
        executor = PoolExecutor(workers=workers, devices=["cpu"] * workers, timeout=timeout)
        return executor, executor.start_calls(on_ask)
    if kind == "ray":
        per_call = float((resources or {}).get("num_cpus", 1))  # a local instance: room for `workers` calls
        executor = RayExecutor(address=address, num_cpus=None if address else max(1, math.ceil(workers * per_call)))
        try:
            return executor, executor.start_calls(on_ask, workers=workers, resources=resources, timeout=timeout)
        except BaseException:
            executor.close()
            raise
    raise ConfigError(f"executor: choose one of {', '.join(CALL_EXECUTORS)}, not {kind!r:.40}")


__all__ = ["CALL_EXECUTORS", "CallFailure", "DirectChannel", "InlineCalls", "ThreadCalls", "make_calls"]
