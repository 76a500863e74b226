"""Evaluators: what turns an architecture into validation and test accuracy for the search.

The loop talks to one small interface, so that training (here) and table lookups (tabular NAS
benchmarks, `nader.search.tables.lookup.TableEvaluator`) are interchangeable::

    evaluator.bind(store, config)      # the run it serves, once before the loop (default: nothing)
    evaluator.capacity                 # evaluations that run side by side
    evaluator.idle() -> int            # how many more would start now (the loop proposes while > 0)
    evaluator.submit(trial)            # a Trial: arch_id, text, widths, seeds, epochs (a rung's budget)
    evaluator.pending() -> int         # seed evaluations submitted and not yet returned
    evaluator.wait(timeout) -> [SeedOutcome]   # blocks until at least one finished (or timeout)
    evaluator.close(abort=False)

A trial is evaluated once per seed; each seed comes back as a :class:`SeedOutcome` with status
``ok``, ``pruned`` (a Python objective the study's pruner stopped, with its last value), ``diverged`` or ``failed`` (every failure, a killed worker or an out-of-memory included,
is an outcome, never an exception), or ``interrupted`` when the machine stopped it (disk full,
I/O error: ``nader.runtime.faults``), which the loop does not hold against the architecture. :class:`TrainingEvaluator` trains with the runtime's
executors (in process, a process pool or Ray): each seed is a runtime ``Job`` whose id is a
hash of what it computes, so a seed finished before an interruption is read back from the run
store instead of being trained again, and an interrupted one resumes from its checkpoint.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional

from nader.compiler.network import BUILDER
from nader.runtime.jobs import Job, Result
from nader.runtime.runner import StoreWatcher


# The training set a search uses per dataset name (see TrainingEvaluator).
SEARCH_TRAINING_SETS = {"cifar10": "cifar10-valid"}


@dataclass
class Trial:
    arch_id: int
    text: str
    widths: Optional[List[int]]
    seeds: List[int]
    label: str = ""
    epochs: Optional[int] = None  # a multi-fidelity rung's budget; None: the configured one


@dataclass
class SeedOutcome:
    arch_id: int
    seed: int
    status: str  # ok | pruned | diverged | failed | interrupted (by the machine: the run stops, a resume retries)
    valid_acc: Optional[float] = None
    test_acc: Optional[float] = None
    seconds: Optional[float] = None
    epochs: Optional[int] = None
    error: Optional[str] = None
    error_kind: Optional[str] = None
    job_id: Optional[str] = None
    result: Optional[Result] = None  # the runtime's full record (committed with the outcome)
    cached: bool = False  # read back from the store, not evaluated now
    objectives: Optional[dict] = None  # other objectives it reported: {"latency": ms} or a user's (objectives.py)
    user_attrs: Optional[dict] = None  # what a Python objective kept with `arch.set_user_attr` (objective.py)

    @classmethod
    def from_result(cls, arch_id: int, r: Result, cached: bool = False) -> "SeedOutcome":
        latency = (r.info or {}).get("latency_ms")  # measured by the runtime when the job asked for it
        return cls(arch_id, r.seed, r.status, r.valid_acc, r.test_acc, r.seconds, r.epochs, r.error, r.error_kind,
                   r.job_id, r, cached, objectives={"latency": latency} if latency is not None else None)


class Evaluator:
    capacity: int = 1

    def bind(self, store, config) -> None:
        """The run this evaluator serves (its store, the loop's, and its settings), once before the
        loop starts; `run_search` calls it."""

    def submit(self, trial: Trial) -> None:
        raise NotImplementedError

    def pending(self) -> int:
        raise NotImplementedError

    def idle(self) -> int:
        return max(0, self.capacity - self.pending())

    def wait(self, timeout: Optional[float] = None) -> List[SeedOutcome]:
        raise NotImplementedError

    def close(self, abort: bool = False) -> None:
        pass


class TrainingEvaluator(Evaluator):
    """Trains each seed of a trial as a runtime job on an executor's dispatch."""

    def __init__(self, executor, store, *, skeleton: str, dataset: str, preset: str, depths=None,
                 data_dir: Optional[str] = None, options: Optional[dict] = None, builder: Optional[str] = None,
                 on_event: Optional[Callable[[dict], None]] = None):
        self.executor, self.store = executor, store
        # A search selects on validation accuracy: on CIFAR-10 it trains NB201's `cifar10-valid`
        # setting (25k train / 25k valid); the runtime's `cifar10` trains on all 50k with no validation.
        dataset = SEARCH_TRAINING_SETS.get(dataset, dataset)
        self.template = Job(arch="", skeleton=skeleton, dataset=dataset, preset=preset, data_dir=data_dir,
                            builder=builder or BUILDER, depths=list(depths) if depths else None,
                            options=dict(options or {}), run_dir=str(store.run_dir.resolve()))
        self.dispatch = executor.start(on_event=on_event)
        self.tickets: Dict[int, tuple] = {}  # dispatch ticket -> (arch_id, job)
        self.ready: collections.deque = collections.deque()  # outcomes read back from the store
        self.jobs: Dict[str, tuple] = {}  # job_id -> (arch_id, seed, label), for progress displays
        self.watcher = None
        if on_event is not None and not executor.native_events:
            self.watcher = StoreWatcher(store.run_dir, on_event)
            self.watcher.start()

    @property
    def capacity(self) -> int:  # a GPU pool grows once it has measured a trial's memory
        return self.dispatch.capacity

    def job(self, trial: Trial, seed: int) -> Job:
        options = dict(self.template.options, **({"epochs": trial.epochs} if trial.epochs else {}))
        return replace(self.template, arch=trial.text, seed=seed, widths=list(trial.widths) if trial.widths else None,
                       name=trial.label or f"arch {trial.arch_id}", options=options)

    def submit(self, trial: Trial) -> None:
        jobs = [self.job(trial, s) for s in trial.seeds]
        self.store.add_jobs(jobs)
        for job in jobs:
            self.jobs[job.job_id] = (trial.arch_id, job.seed, job.name)
            done = self.store.finished(job.job_id)
            if done is not None:
                self.ready.append(SeedOutcome.from_result(trial.arch_id, done, cached=True))
            else:
                self.tickets[self.dispatch.submit(job)] = (trial.arch_id, job)

    def pending(self) -> int:
        return self.dispatch.pending() + len(self.ready)

    def idle(self) -> int:
        return max(0, self.capacity - self.dispatch.pending()) if not self.ready else 0

    def wait(self, timeout=None):
        if self.ready:
            out = list(self.ready)
            self.ready.clear()
            return out
        out = []
        for ticket, result in self.dispatch.wait(timeout):
            arch_id, _job = self.tickets.pop(ticket)
            out.append(SeedOutcome.from_result(arch_id, result))
        return out

    def close(self, abort=False):
        try:
            self.dispatch.close(abort=abort)
        finally:
            if self.watcher is not None:
                self.watcher.stop()
