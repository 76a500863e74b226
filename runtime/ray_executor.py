"""The Ray executor: jobs as Ray tasks on a cluster or a local instance, and calls (`calls.py`:
functions, a Python objective's evaluation) as Ray tasks with the resources each asks for."""
from __future__ import annotations

import os
import socket
import sys
import time
from typing import Optional

from .dispatch import CallFailure, Dispatch, Executor, not_shippable
from .errors import ConfigError
from .jobs import E_EXCEPTION, E_KILLED, E_TIMEOUT, Job, Result, failure, run_job

#: how often a call dispatch looks for questions from its running tasks (seconds)
POLL_SECONDS = 0.05


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

    def start(self, *, on_event=None):
        return _RayDispatch(self, self._ensure())

    def start_calls(self, on_ask, *, workers: int, resources: Optional[dict] = None, timeout: Optional[float] = None):
        """A dispatch of calls (`calls.py`): each a Ray task holding `resources` (Ray's names:
        num_cpus (default 1), num_gpus, memory, and custom resources; {"num_gpus": 0.25} puts four
        on a GPU), at most `workers` at once; `timeout` cancels one that has run too long. A task's
        questions reach `on_ask` here through a mailbox actor. Refused when the cluster has less
        of a resource than one call asks for (the call would wait for ever)."""
        return _RayCallDispatch(self._ensure(), on_ask, workers, dict(resources or {}), timeout)

    def close(self):
        if self._ray is not None and self._owns:
            try:
                self._ray.shutdown()
            except Exception:
                pass
        self._ray = None
        self._owns = False


def _ray_failure_kind(exc) -> str:
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"WorkerCrashedError", "NodeDiedError", "ActorDiedError", "LocalRayletDiedError"}:
        return E_KILLED
    if "OutOfMemoryError" in names:
        return "oom"
    return E_EXCEPTION


def _ray_failure_message(exc) -> str:
    cause = getattr(exc, "cause", None)
    if cause is not None:
        return f"Ray task failed: {type(cause).__name__}: {cause}"
    text = str(exc).strip().splitlines()
    return f"Ray task failed: {type(exc).__name__}: {text[0] if text else ''}"


class _RayDispatch(Dispatch):
    """Submitted jobs become Ray tasks at once (Ray queues what the cluster cannot run yet);
    ``capacity`` is the number of tasks the cluster can run side by side."""

    def __init__(self, executor: RayExecutor, ray):
        super().__init__()
        self.executor, self.ray = executor, ray
        self.gpus = executor.gpus_per_job
        if self.gpus is None:
            self.gpus = 1 if ray.cluster_resources().get("GPU", 0) > 0 else 0
        self.device = "cuda" if self.gpus else "cpu"
        self.task = ray.remote(_ray_task)
        res = ray.cluster_resources()
        slots = res.get("GPU", 0) / self.gpus if self.gpus else res.get("CPU", 1) / max(executor.cpus_per_job, 1e-9)
        self.capacity = max(1, int(slots))
        self.refs: dict = {}  # ObjectRef -> (ticket, job, submitted)

    def submit(self, job):
        ex = self.executor
        # a job's "threads" option fixes its torch thread count (needed for bit-identical
        # results across executors); the task then reserves that many CPUs
        threads = int(job.options.get("threads") or ex.threads or max(1, int(ex.cpus_per_job)))
        cpus = max(float(ex.cpus_per_job), float(threads)) if job.options.get("threads") else ex.cpus_per_job
        ref = self.task.options(num_cpus=cpus, num_gpus=self.gpus, max_retries=0).remote(job.to_dict(), threads,
                                                                                      self.device)
        ticket = self._ticket()
        self.refs[ref] = (ticket, job, time.monotonic())
        return ticket

    def pending(self):
        return len(self.refs)

    def wait(self, timeout=None):
        if not self.refs:
            return []
        done, _ = self.ray.wait(list(self.refs), num_returns=1, timeout=timeout)
        out = []
        for ref in done:
            ticket, job, submitted = self.refs.pop(ref)
            try:
                r = Result.from_dict(self.ray.get(ref))
            except Exception as exc:  # RayTaskError, WorkerCrashedError, node died, ...
                r = failure(job, _ray_failure_kind(exc), _ray_failure_message(exc),
                            seconds=time.monotonic() - submitted)
            out.append((ticket, r))
        return out

    def close(self, abort=False):
        _cancel(self.ray, self.refs)


def _cancel(ray, refs: dict) -> None:
    """Cancel every task still out (killing its worker): none is left running on the cluster."""
    for ref in refs:
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass
    refs.clear()


# ---------------------------------------------------------------------- calls


def _ray_call(fn, mailbox, ticket: int):  # runs on a Ray worker
    mailbox.start.remote(ticket)  # its timeout counts from here, not from the queue
    return fn(_RayChannel(mailbox, ticket))


class _RayChannel:
    """A running task's questions to the driver, through the mailbox actor."""

    def __init__(self, mailbox, ticket: int):
        self.mailbox, self.ticket = mailbox, ticket

    def ask(self, message):
        import ray

        return ray.get(self.mailbox.ask.remote(self.ticket, message))


class _Mailbox:
    """An async actor between running tasks and the driver: tasks post questions and wait for the
    answers; the driver takes the questions (and which tasks started) and posts the answers."""

    def __init__(self):
        self.started: list = []
        self.inbox: list = []  # (question id, ticket, message)
        self.waiting: dict = {}  # question id -> future
        self.count = 0

    async def start(self, ticket):
        self.started.append(ticket)

    async def ask(self, ticket, message):
        import asyncio

        future = asyncio.get_running_loop().create_future()
        self.count += 1
        self.waiting[self.count] = future
        self.inbox.append((self.count, ticket, message))
        return await future

    async def take(self):
        out = (self.started, self.inbox)
        self.started, self.inbox = [], []
        return out

    async def answer(self, replies):
        for question, reply in replies:
            future = self.waiting.pop(question, None)
            if future is not None and not future.done():
                future.set_result(reply)


_RAY_OPTIONS = ("num_cpus", "num_gpus", "memory")  # the rest of a call's resources are custom ones


class _RayCallDispatch(Dispatch):
    def __init__(self, ray, on_ask, workers: int, resources: dict, timeout: Optional[float]):
        super().__init__()
        self.ray, self.on_ask, self.timeout = ray, on_ask, timeout
        self.capacity = workers
        options = {"num_cpus": 1, **{k: v for k, v in resources.items() if k in _RAY_OPTIONS}}
        custom = {k: v for k, v in resources.items() if k not in _RAY_OPTIONS}
        _check_resources(ray.cluster_resources(), options, custom)
        self.task = ray.remote(_ray_call).options(max_retries=0, resources=custom or None, **options)
        self.mailbox = ray.remote(_Mailbox).options(num_cpus=0).remote()
        self.refs: dict = {}  # ObjectRef -> ticket
        self.started: dict = {}  # ticket -> when its task started
        self.done: list = []

    def submit(self, fn):
        ticket = self._ticket()
        try:
            ref = self.task.remote(fn, self.mailbox, ticket)
        except TypeError as exc:  # Ray serialises the arguments here: a lock, an open file in what it holds
            raise not_shippable("ray", exc) from None
        self.refs[ref] = ticket
        return ticket

    def pending(self):
        return len(self.refs) + len(self.done)

    def _serve(self) -> None:
        """Answer the running tasks' questions; note their starts; cancel the ones past the timeout."""
        started, inbox = self.ray.get(self.mailbox.take.remote())
        now = time.monotonic()
        for ticket in started:
            self.started.setdefault(ticket, now)
        if inbox:
            self.mailbox.answer.remote([(question, self.on_ask(message)) for question, _ticket, message in inbox])
        if self.timeout is None:
            return
        for ref, ticket in list(self.refs.items()):
            began = self.started.get(ticket)
            if began is not None and now - began > self.timeout:
                self.ray.cancel(ref, force=True)
                del self.refs[ref]
                self.done.append((ticket, CallFailure(E_TIMEOUT, f"call exceeded the {self.timeout:g}s time limit",
                                                      now - began)))

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done and self.refs:
            self._serve()
            if self.done:
                break
            left = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
            ready, _ = self.ray.wait(list(self.refs), num_returns=len(self.refs), timeout=max(0.0, left))
            for ref in ready:
                ticket = self.refs.pop(ref)
                began = self.started.pop(ticket, None)
                try:
                    value = self.ray.get(ref)
                except Exception as exc:  # WorkerCrashedError, node died, a function that did not unpickle
                    seconds = time.monotonic() - began if began is not None else 0.0
                    value = CallFailure(_ray_failure_kind(exc), _ray_failure_message(exc), seconds)
                self.done.append((ticket, value))
            if deadline is not None and time.monotonic() >= deadline:
                break
        out, self.done = self.done, []
        return out

    def close(self, abort=False):
        _cancel(self.ray, self.refs)
        try:
            self.ray.kill(self.mailbox)
        except Exception:
            pass


def _check_resources(cluster: dict, options: dict, custom: dict) -> None:
    names = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}
    asked = {names.get(k, k): v for k, v in {**options, **custom}.items() if v}
    short = [f"{k} {v:g} (it has {cluster.get(k, 0):g})" for k, v in asked.items() if cluster.get(k, 0) < v]
    if short:
        raise ConfigError(f"each trial asks the Ray cluster for {', '.join(short)}: no trial could start; lower "
                          f"resources= or add nodes that have them")
