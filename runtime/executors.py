"""Executors: run a list of jobs here, in a pool of local worker processes, or on Ray.

All three share one contract: ``map(jobs, on_result=None, on_event=None) -> list[Result]`` in
the jobs' order. Every failure of a job (build error, NaN, out of memory, a killed worker, a
Ray task error) becomes a failed :class:`Result`; nothing a job does stops the caller.
``on_result(result)`` is called as each job finishes (the runner commits it to the store);
``on_event(event)`` receives the trainer's start/epoch events where the executor can deliver
them (in-process and pool; for Ray the runner polls the run store instead).
"""
from __future__ import annotations

import collections
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import signal
import sys
import time
from typing import Callable, List, Optional, Sequence

from .errors import ConfigError
from .gpu_slots import DeviceSlots, MemoryReport, cuda_device_count
from .jobs import E_EXCEPTION, E_KILLED, E_TIMEOUT, Job, Result, failure, run_job

ResultCb = Optional[Callable[[Result], None]]
EventCb = Optional[Callable[[dict], None]]


class Executor:
    name = "base"
    native_events = True

    def map(self, jobs: Sequence[Job], *, on_result: ResultCb = None, on_event: EventCb = None) -> List[Result]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# --------------------------------------------------------------------------- in-process


class InProcessExecutor(Executor):
    """Runs jobs one after another in this process (the reference for the others)."""

    name = "inprocess"

    def __init__(self, device: Optional[str] = None, callbacks: Sequence[Callable[[dict], None]] = ()):
        self.device = device
        self.callbacks = list(callbacks)

    def map(self, jobs, *, on_result=None, on_event=None):
        out = []
        for job in jobs:
            cbs = ([on_event] if on_event else []) + self.callbacks
            r = run_job(job, device=self.device, callbacks=cbs)
            if on_result:
                on_result(r)
            out.append(r)
        return out


# --------------------------------------------------------------------------- process pool


def _signal_name(code: Optional[int]) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _watch_parent(parent_pid: int) -> None:
    """Exit when the parent goes away (killed without cleaning up): an orphan must not keep
    training and writing the checkpoint that a resumed run is using."""
    import threading

    def loop():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=loop, daemon=True, name="nader-parent-watch").start()


def _pool_worker(conn, device: Optional[str], threads: Optional[int], parent_pid: Optional[int] = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C means
    if parent_pid:
        _watch_parent(parent_pid)
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
        job = Job.from_dict(msg)

        def send(ev, _conn=conn):
            _conn.send(("event", dict(ev)))

        try:
            r = run_job(job, device=device, callbacks=[send])
        except BaseException as exc:  # noqa: BLE001 - report, never hang the parent
            r = failure(job, E_EXCEPTION, f"{type(exc).__name__}: {exc}")
        conn.send(("result", r.to_dict()))


class _Worker:
    def __init__(self, ctx, device, threads):
        self.device = device
        parent, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_pool_worker, args=(child, device, threads, os.getpid()), daemon=True,
                                name=f"nader-worker[{device or 'cpu'}]")
        self.proc.start()
        child.close()
        self.conn = parent
        self.index: Optional[int] = None  # job being run
        self.started = 0.0

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)
        try:
            self.conn.close()
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
            # a GPU trial spends its CPU time launching kernels: one torch thread each
            self.threads = threads or 1
        else:  # CPU workers, or an explicit list with one entry per worker
            self.devices = base
            self.threads = threads or max(1, cpus // len(self.devices))
        self.timeout = timeout
        self.ctx = mp.get_context("spawn")

    def map(self, jobs, *, on_result=None, on_event=None):
        jobs = list(jobs)
        results: List[Optional[Result]] = [None] * len(jobs)
        pending = collections.deque(range(len(jobs)))
        workers: List[_Worker] = []

        def finish(i: int, r: Result) -> None:
            results[i] = r
            if on_result:
                on_result(r)

        def assign(w: _Worker) -> None:
            if pending:
                w.index = pending.popleft()
                w.started = time.monotonic()
                try:
                    w.conn.send(jobs[w.index].to_dict())
                except (OSError, EOFError):
                    pass  # it died meanwhile: its sentinel reports it
            else:
                w.index = None

        def grow(device, payload) -> None:
            """A worker's memory report may let its GPU take more trials."""
            report = MemoryReport.from_event(payload) if self.slots is not None else None
            if report is None:
                return
            running = sum(1 for x in workers if x.device == device)
            for _ in range(self.slots.observe(device, report, running)):
                if not pending:
                    break
                nw = _Worker(self.ctx, device, self.threads)
                workers.append(nw)
                assign(nw)

        def handle(w: _Worker, kind: str, payload) -> None:
            if kind == "event":
                grow(w.device, payload)
                if on_event:
                    on_event(payload)
            elif kind == "result" and w.index is not None:
                i = w.index
                w.index = None
                finish(i, Result.from_dict(payload))
                assign(w)

        def drain(w: _Worker) -> bool:
            """Read every message waiting; False when the pipe is closed."""
            try:
                while w.conn.poll():
                    kind, payload = w.conn.recv()
                    handle(w, kind, payload)
            except (EOFError, OSError):
                return False
            return True

        try:
            start = self.slots.initial() if self.slots is not None else self.devices  # grown by earlier maps
            for dev in start[: max(1, min(len(start), len(jobs)))]:
                if not pending:
                    break
                w = _Worker(self.ctx, dev, self.threads)
                workers.append(w)
                assign(w)
            while any(w.index is not None for w in workers):
                busy = [w for w in workers if w.index is not None]
                waitables = [w.conn for w in busy] + [w.proc.sentinel for w in busy]
                mpc.wait(waitables, timeout=1.0)
                for w in list(busy):
                    alive = drain(w)
                    dead = not alive or not w.proc.is_alive()
                    if dead:
                        w.proc.join(timeout=5)
                        alive = drain(w) and alive
                    if dead and w.index is not None:
                        i = w.index
                        w.index = None
                        code = w.proc.exitcode
                        finish(i, failure(jobs[i], E_KILLED,
                                          f"worker process died while running the job ({_signal_name(code)})",
                                          seconds=time.monotonic() - w.started))
                    if dead:
                        w.kill()
                        workers.remove(w)
                        if pending:
                            nw = _Worker(self.ctx, w.device, self.threads)
                            workers.append(nw)
                            assign(nw)
                    elif w.index is not None and self.timeout and time.monotonic() - w.started > self.timeout:
                        i = w.index
                        w.index = None
                        w.kill()
                        workers.remove(w)
                        finish(i, failure(jobs[i], E_TIMEOUT, f"job exceeded the {self.timeout:g}s time limit",
                                          seconds=time.monotonic() - w.started))
                        if pending:
                            nw = _Worker(self.ctx, w.device, self.threads)
                            workers.append(nw)
                            assign(nw)
        except BaseException:
            for w in workers:  # interrupted (Ctrl-C) or a callback failed: stop at once
                w.kill()
            raise
        finally:
            for w in workers:
                try:
                    w.conn.send(None)
                except (OSError, EOFError):
                    pass
            for w in workers:
                w.proc.join(timeout=10)
                w.kill()
        return [r for r in results]  # type: ignore[misc]


# --------------------------------------------------------------------------- Ray


def _ray_task(job_dict: dict, threads: Optional[int], device: Optional[str]) -> dict:  # runs on a Ray worker
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    job = Job.from_dict(job_dict)
    if job.run_dir and not os.path.isdir(job.run_dir):
        job.run_dir = None  # not a shared filesystem: no checkpoints on this node
    return run_job(job, device=device).to_dict()


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """Fail fast (instead of Ray's minutes of retries) when HOST:PORT does not answer."""
    if address in ("auto", "local") or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"Ray address must be 'auto' or HOST:PORT, not {address!r}")
    import socket

    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {exc}") from None


class RayExecutor(Executor):
    """Runs jobs as Ray tasks: on a cluster (``address="auto"`` or ``"HOST:PORT"``) or, with no
    address, on a local Ray instance started with ``num_cpus`` CPUs (and shut down on close).

    Each task asks for ``cpus_per_job`` CPUs (its torch thread count) and ``gpus_per_job`` GPUs
    (default: 1 when the cluster has GPUs). Tasks are not retried: a crashed worker gives a
    failed result. A local instance passes this process's ``sys.path`` to its workers so that
    builders importable here are importable there.
    """

    name = "ray"
    native_events = False

    def __init__(self, address: Optional[str] = None, num_cpus: Optional[int] = None, cpus_per_job: float = 1,
                 gpus_per_job: Optional[float] = None, runtime_env: Optional[dict] = None,
                 threads: Optional[int] = None):
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_job = cpus_per_job
        self.gpus_per_job = gpus_per_job
        self.runtime_env = runtime_env
        self.threads = threads
        self._owns = False
        self._ray = None

    def _ensure(self):
        if self._ray is not None:
            return self._ray
        try:
            import ray
        except ImportError:
            raise ConfigError("the Ray executor needs ray: pip install 'nader-toolchain[ray]'") from None
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        if not ray.is_initialized():
            kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=True, logging_level="ERROR")
            env = dict(self.runtime_env or {})
            if self.address:
                _check_reachable(self.address)
            try:
                if self.address:
                    ray.init(address=self.address, runtime_env=env or None, **kw)
                else:
                    paths = [p for p in sys.path if p and os.path.isdir(p)]
                    vars_ = dict(env.get("env_vars") or {})
                    vars_.setdefault("PYTHONPATH", os.pathsep.join(paths))
                    env["env_vars"] = vars_
                    ray.init(num_cpus=self.num_cpus or os.cpu_count() or 1, runtime_env=env, **kw)
            except Exception as exc:
                where = self.address or "a local instance"
                raise ConfigError(f"cannot start or reach Ray ({where}): {type(exc).__name__}: {exc}") from None
            self._owns = True
        self._ray = ray
        return ray

    def map(self, jobs, *, on_result=None, on_event=None):
        ray = self._ensure()
        jobs = list(jobs)
        gpus = self.gpus_per_job
        if gpus is None:
            gpus = 1 if ray.cluster_resources().get("GPU", 0) > 0 else 0
        task = ray.remote(_ray_task)
        device = "cuda" if gpus else "cpu"
        refs = {}
        for i, j in enumerate(jobs):
            # a job's "threads" option fixes its torch thread count (needed for bit-identical
            # results across executors); the task then reserves that many CPUs
            threads = int(j.options.get("threads") or self.threads or max(1, int(self.cpus_per_job)))
            cpus = max(float(self.cpus_per_job), float(threads)) if j.options.get("threads") else self.cpus_per_job
            ref = task.options(num_cpus=cpus, num_gpus=gpus, max_retries=0).remote(j.to_dict(), threads, device)
            refs[ref] = i
        results: List[Optional[Result]] = [None] * len(jobs)
        started = time.monotonic()
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    i = refs.pop(ref)
                    try:
                        r = Result.from_dict(ray.get(ref))
                    except Exception as exc:  # RayTaskError, WorkerCrashedError, node died, ...
                        r = failure(jobs[i], self._kind(exc), self._message(exc), seconds=time.monotonic() - started)
                    results[i] = r
                    if on_result:
                        on_result(r)
        except BaseException:
            for ref in refs:  # interrupted: do not leave tasks running on the cluster
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    pass
            raise
        return results  # type: ignore[return-value]

    def _kind(self, exc) -> str:
        names = {c.__name__ for c in type(exc).__mro__}
        if names & {"WorkerCrashedError", "NodeDiedError", "ActorDiedError", "LocalRayletDiedError"}:
            return E_KILLED
        if "OutOfMemoryError" in names:
            return "oom"
        return E_EXCEPTION

    @staticmethod
    def _message(exc) -> str:
        cause = getattr(exc, "cause", None)
        if cause is not None:
            return f"Ray task failed: {type(cause).__name__}: {cause}"
        text = str(exc).strip().splitlines()
        return f"Ray task failed: {type(exc).__name__}: {text[0] if text else ''}"

    def close(self):
        if self._ray is not None and self._owns:
            try:
                self._ray.shutdown()
            except Exception:
                pass
        self._ray = None
        self._owns = False


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
