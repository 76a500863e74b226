"""The process-pool executor: long-lived spawned workers, one per device slot. They run the
runtime's jobs (`start`) or calls (`start_calls`: cloudpickled functions that may ask the parent
questions while they run; `calls.py`)."""
from __future__ import annotations

import collections
import contextlib
import ctypes
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import signal
import sys
import threading
import time
from typing import List, Optional, Sequence

from .dispatch import CallFailure, Dispatch, EventCb, Executor, not_shippable
from .errors import ConfigError
from .gpu_slots import DeviceSlots, MemoryReport, cuda_device_count
from .jobs import E_EXCEPTION, E_KILLED, E_TIMEOUT, Job, Result, failure, run_job


def _signal_name(code: Optional[int]) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _watch_parent(parent_pid: int, lifeline=None) -> None:
    """Exit at once, silently, when the parent goes away (`kill -9`, a crash): an orphan must not
    keep training and writing the checkpoint that a resumed run is using.

    The parent-death signal (`_death_signal`) is the first guard. `lifeline` is the reading end of a
    pipe whose only writing end the parent holds and never writes: the read returns (EOF) the moment
    the parent's process is gone. Polling the parent's pid stays as the last guard (a forked child of
    the parent may hold the writing end)."""
    def wait_for_eof():
        try:
            lifeline.recv()
        except (EOFError, OSError):
            pass
        os._exit(1)

    def poll():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    _death_signal()
    if os.getppid() != parent_pid:  # gone before the signal was asked for
        os._exit(1)
    if lifeline is not None:
        threading.Thread(target=wait_for_eof, daemon=True, name="nader-parent-lifeline").start()
    threading.Thread(target=poll, daemon=True, name="nader-parent-watch").start()


def _death_signal() -> None:
    """Linux: the kernel sends SIGTERM (its default action ends the process; the worker sets no
    handler) when the parent dies, even while the worker is in a long call holding the GIL, which
    the threads above would wait for. The pool's workers are started and stopped by one thread (the
    dispatch's), whose exit is what the kernel watches."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the lifeline and the poll still stop the worker
        pass


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _pool_worker(conn, device: Optional[str], threads: Optional[int], parent_pid: Optional[int] = None,
                 lifeline=None, env: Optional[dict] = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C means
    os.environ.update(env or {})  # before anything imports torch (a call worker's OMP_NUM_THREADS)
    if parent_pid:
        _watch_parent(parent_pid, lifeline)
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        if isinstance(msg, tuple) and msg[0] == "call":
            _run_call(conn, msg[1])
            continue
        job = Job.from_dict(msg)

        def send(ev, _conn=conn):
            _tell(_conn, ("event", dict(ev)))

        try:
            r = run_job(job, device=device, callbacks=[send])
        except BaseException as exc:  # noqa: BLE001 - report, never hang the parent
            r = failure(job, E_EXCEPTION, f"{type(exc).__name__}: {exc}")
        _tell(conn, ("result", r.to_dict()))


class _PipeChannel:
    """A call's questions to the parent, over the worker's pipe: the parent answers each at once."""

    def __init__(self, conn):
        self.conn = conn

    def ask(self, message):
        _tell(self.conn, ("ask", message))
        try:
            kind, reply = self.conn.recv()
        except (EOFError, OSError):
            os._exit(1)  # the parent is gone
        return reply


def _run_call(conn, blob: bytes) -> None:
    """Run a cloudpickled function (plain `pickle` loads it, importing cloudpickle's helpers) and
    send back what it returns; one that cannot be loaded or sent is reported as failed."""
    try:
        fn = pickle.loads(blob)
        value = fn(_PipeChannel(conn))
        pickle.dumps(value)  # what cannot travel back is this call's failure, not the worker's
    except BaseException as exc:  # noqa: BLE001 - report, never hang the parent
        _tell(conn, ("failed", f"{type(exc).__name__}: {exc}"[:500]))
        return
    _tell(conn, ("result", value))


def _tell(conn, message) -> None:
    """Send to the parent; when it is gone there is no one to tell and nothing to do: exit quietly
    (no BrokenPipeError traceback on the terminal the parent left)."""
    try:
        conn.send(message)
    except (OSError, EOFError):
        os._exit(1)


class _Worker:
    def __init__(self, ctx, device, threads, env: Optional[dict] = None):
        self.device = device
        parent, child = ctx.Pipe(duplex=True)
        # the worker's end reads EOF when this process is gone (`_watch_parent`); this end is never written
        lifeline, self.lifeline = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_pool_worker, args=(child, device, threads, os.getpid(), lifeline, env),
                                daemon=True, name=f"nader-worker[{device or 'cpu'}]")
        self.proc.start()
        child.close()
        lifeline.close()
        self.conn = parent
        self.task: Optional[tuple] = None  # (ticket, job) being run
        self.started = 0.0

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)
        for end in (self.conn, self.lifeline):
            try:
                end.close()
            except OSError:
                pass


def default_devices(workers: Optional[int] = None, n_gpu: Optional[int] = None) -> List[Optional[str]]:
    """Every GPU when there are any (the pool decides how many workers each gets); else
    `workers` CPU workers (default 1)."""
    n_gpu = cuda_device_count() if n_gpu is None else n_gpu
    if n_gpu:
        return [f"cuda:{i}" for i in range(n_gpu)]
    return ["cpu"] * max(1, workers or 1)


class PoolExecutor(Executor):
    """A pool of long-lived worker processes (spawn context).

    On GPUs it runs several trials per device, one worker each (:mod:`.gpu_slots`):
    ``trials_per_device`` fixes K; by default (None) each GPU starts one worker, whose first
    epoch reports the trial's memory peak and the device's free memory, and the pool then grows
    to the K that memory and the CPU cores allow. ``workers`` caps the total. On the CPU
    ``workers`` processes share the cores, as before.

    A worker that dies (``os._exit``, SIGKILL, a segfault, the OOM killer) fails only the job it
    was running, with the reason, and is replaced. ``timeout`` (seconds per job) kills and fails
    a job that runs too long. Each CPU worker gets ``threads`` torch threads (default: the cores
    divided among the workers).
    """

    name = "pool"

    def __init__(self, workers: Optional[int] = None, devices: Optional[Sequence[Optional[str]]] = None,
                 threads: Optional[int] = None, timeout: Optional[float] = None,
                 trials_per_device: Optional[int] = None, cpus: Optional[int] = None):
        if workers is not None and workers < 1:
            raise ConfigError("workers must be at least 1")
        if trials_per_device is not None and trials_per_device < 1:
            raise ConfigError("trials per GPU must be at least 1")
        cpus = cpus or os.cpu_count() or 1
        base = list(devices) if devices else default_devices(workers)
        gpus = list(dict.fromkeys(d for d in base if d and str(d).startswith("cuda")))
        self.slots: Optional[DeviceSlots] = None
        if gpus and len(gpus) == len(base):  # one entry per GPU: the pool packs trials onto them
            self.slots = DeviceSlots(gpus, trials_per_device, cpus=cpus, max_workers=workers)
            self.devices = self.slots.initial()
            self.threads = threads or 1  # a GPU trial spends its CPU time launching kernels
        else:  # CPU workers, or an explicit list with one entry per worker
            self.devices = base
            self.threads = threads or max(1, cpus // len(self.devices))
        self.timeout = timeout
        self.ctx = mp.get_context("spawn")

    def start(self, *, on_event=None):
        return _PoolDispatch(self, on_event)

    def start_calls(self, on_ask):
        """A dispatch of calls (`calls.py`) on CPU workers: `submit(fn)` cloudpickles `fn`, a worker
        runs ``fn(channel)``; its ``channel.ask(message)`` is answered by ``on_ask(message)`` here.
        Workers import nothing before the first call (torch's threads: OMP_NUM_THREADS)."""
        return _CallDispatch(self, on_ask)


class _PoolDispatch(Dispatch):
    """Workers start on demand (one per device slot) and stay up between jobs until close."""

    def __init__(self, pool: PoolExecutor, on_event: EventCb):
        super().__init__()
        self.pool = pool
        self.on_event = on_event
        # device slots, one per worker; grown when a GPU's memory report allows more trials
        self.devices = pool.slots.initial() if pool.slots is not None else list(pool.devices)
        self.capacity = len(self.devices)
        self.queue: collections.deque = collections.deque()  # (ticket, job) not yet running
        self.workers: List[_Worker] = []
        self.done: List[tuple] = []  # finished, not yet returned by wait

    def submit(self, job):
        ticket = self._ticket()
        self.queue.append((ticket, job))
        self._fill()
        return ticket

    def pending(self):
        return len(self.queue) + sum(1 for w in self.workers if w.task is not None) + len(self.done)

    def _free_device(self):
        used = collections.Counter(w.device for w in self.workers)
        for dev in self.devices:
            if used[dev] > 0:
                used[dev] -= 1
            else:
                return dev
        return _NO_DEVICE

    def _fill(self) -> None:
        """Give queued jobs to idle workers, starting workers up to one per device slot."""
        for w in self.workers:
            if not self.queue:
                return
            if w.task is None:
                self._assign(w)
        while self.queue:
            dev = self._free_device()
            if dev is _NO_DEVICE:
                return
            w = self._new_worker(dev)
            self.workers.append(w)
            self._assign(w)

    def _new_worker(self, device) -> _Worker:
        return _Worker(self.pool.ctx, device, self.pool.threads)

    def _message(self, task):
        return task.to_dict()

    def _failed(self, task, kind: str, message: str, seconds: float):
        return failure(task, kind, message, seconds=seconds)

    def _assign(self, w: _Worker) -> None:
        w.task = self.queue.popleft()
        w.started = time.monotonic()
        try:
            w.conn.send(self._message(w.task[1]))
        except (OSError, EOFError):
            pass  # it died meanwhile: its sentinel reports it

    def _finish(self, w: _Worker, r: Result) -> None:
        self.done.append((w.task[0], r))
        w.task = None

    def _handle(self, w: _Worker, kind: str, payload) -> None:
        if kind == "event":
            self._grow(w.device, payload)
            if self.on_event:
                self.on_event(payload)
        elif kind == "result" and w.task is not None:
            self._finish(w, Result.from_dict(payload))

    def _grow(self, device, payload) -> None:
        """A worker's memory report may let its GPU take more trials."""
        report = MemoryReport.from_event(payload) if self.pool.slots is not None else None
        if report is None:
            return
        running = sum(1 for x in self.workers if x.device == device)
        extra = self.pool.slots.observe(device, report, running)
        if extra:
            self.devices += [device] * extra
            self.capacity = len(self.devices)
            self._fill()

    def _drain(self, w: _Worker) -> bool:
        """Read every message waiting; False when the pipe is closed."""
        try:
            while w.conn.poll():
                kind, payload = w.conn.recv()
                self._handle(w, kind, payload)
        except (EOFError, OSError):
            return False
        return True

    def _retire(self, w: _Worker) -> None:
        w.kill()
        self.workers.remove(w)

    def _step(self, timeout: float) -> None:
        busy = [w for w in self.workers if w.task is not None]
        if not busy:
            return
        mpc.wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=timeout)
        for w in busy:
            alive = self._drain(w)
            dead = not alive or not w.proc.is_alive()
            if dead:
                w.proc.join(timeout=5)
                alive = self._drain(w) and alive
                if w.task is not None:
                    self._finish(w, self._failed(w.task[1], E_KILLED, "worker process died while running the job "
                                                                      f"({_signal_name(w.proc.exitcode)})",
                                                 time.monotonic() - w.started))
                self._retire(w)
            elif w.task is not None and self.pool.timeout and time.monotonic() - w.started > self.pool.timeout:
                self._finish(w, self._failed(w.task[1], E_TIMEOUT,
                                             f"job exceeded the {self.pool.timeout:g}s time limit",
                                             time.monotonic() - w.started))
                self._retire(w)
        self._fill()

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done and any(w.task is not None for w in self.workers):
            left = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
            if left <= 0:
                break
            self._step(left)
        out, self.done = self.done, []
        return out

    def close(self, abort=False):
        if abort:
            for w in self.workers:  # interrupted (Ctrl-C) or a callback failed: stop at once
                w.kill()
        for w in self.workers:
            try:
                w.conn.send(None)
            except (OSError, EOFError):
                pass
        for w in self.workers:
            w.proc.join(timeout=10)
            w.kill()
        self.workers = []
        self.queue.clear()


@contextlib.contextmanager
def _main_left_out():
    """Spawn a call worker without running the parent's main script in it: a spawned child runs
    `__main__` again (multiprocessing's preparation), which a user's script without an
    ``if __name__ == "__main__":`` guard cannot survive (it would start its study again). A call
    needs nothing of it: cloudpickle ships what `__main__` defines by value."""
    main = sys.modules.get("__main__")
    saved = dict(vars(main)) if main is not None else {}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None
        yield
    finally:
        if main is not None:
            for key in ("__file__", "__spec__"):
                if key in saved:
                    main.__dict__[key] = saved[key]


class _CallDispatch(_PoolDispatch):
    """The pool's workers running calls: cloudpickled functions in, their values out, and their
    questions (`_PipeChannel.ask`) answered by `on_ask` as they come."""

    def __init__(self, pool: PoolExecutor, on_ask):
        super().__init__(pool, None)
        self.on_ask = on_ask
        # torch, if the function imports it, shares the cores among the workers without being imported here
        self.env = {"OMP_NUM_THREADS": str(pool.threads)}

    def submit(self, fn):
        import cloudpickle  # the process executor's one dependency: functions of __main__, lambdas, closures

        try:
            blob = cloudpickle.dumps(fn)
        except Exception as exc:  # a lock, an open file, a generator in what it holds
            raise not_shippable("process", exc) from None
        return super().submit(blob)

    def _new_worker(self, device) -> _Worker:
        with _main_left_out():
            return _Worker(self.pool.ctx, device, None, self.env)

    def _message(self, task):
        return ("call", task)

    def _failed(self, task, kind: str, message: str, seconds: float):
        return CallFailure(kind, message.replace("the job", "the call").replace("job exceeded", "call exceeded"),
                           seconds)

    def _handle(self, w: _Worker, kind: str, payload) -> None:
        if kind == "ask":
            try:
                w.conn.send(("answer", self.on_ask(payload)))
            except (OSError, EOFError):
                pass  # it died meanwhile: its sentinel reports it
        elif kind == "result" and w.task is not None:
            self._finish(w, payload)
        elif kind == "failed" and w.task is not None:
            self._finish(w, CallFailure(E_EXCEPTION, payload, time.monotonic() - w.started))


_NO_DEVICE = object()
