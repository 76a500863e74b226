"""The loop's evaluator for a Python objective: one call of the function per seed, K at once, on
threads, worker processes or Ray tasks (`nader.runtime.calls`).

The driver (the process that runs the loop) is the one writer: workers return outcomes, the loop
records them as they finish (so the strategy hears of them in completion order), and the values
an objective reports while it runs (`arch.report`) come back through its channel, are judged by
the study's pruner here (`nader.search.pruners`) and stored by the loop's thread. A worker that
dies (killed, out of memory) loses only its call, which is run once more (the architecture's
second attempt, as a resume gives a killed training); a second death, or a call past
`trial_timeout`, is that seed's failure with the runtime's error kind (`killed`, `timeout`).
"""
from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional

from nader.compiler.plan import resolve_depths
from nader.compiler.skeletons import skeleton_info
from nader.runtime.calls import make_calls
from nader.runtime.dispatch import CallFailure
from nader.runtime.jobs import E_EXCEPTION, E_KILLED

from .evaluator import Evaluator, SeedOutcome, Trial
from .objective import Arch, ObjectiveCall
from .objectives import of_config
from .pruners import Reports, make_pruner
from .spaces import nb201

CALL_ATTEMPTS = 2  # a call whose worker died is run once more in the session


def arch_of(config, trial: Trial, seed: int, params: Optional[int], flops: Optional[int]) -> Arch:
    """What the objective receives for one seed of a trial (params and flops as the compiler counted)."""
    cell = None
    if config.space == "nb201":
        try:
            cell = str(nb201.cell_of_text(trial.text))
        except nb201.NotInSpace:
            cell = None
    return Arch(trial.arch_id, trial.text, config.skeleton, config.dataset,
                list(resolve_depths(skeleton_info(config.skeleton), config.depths)), trial.widths,
                params, flops, seed, cell, trial.epochs, run_dir=Path(config.run_dir) if config.run_dir else None)


def stored_arch(config, store, trial: Trial, seed: int) -> Arch:
    """`arch_of` with the counts the store holds for the trial's architecture."""
    node = store.node(trial.arch_id)
    return arch_of(config, trial, seed, node.params if node else None, node.flops if node else None)


def pruner_of(config):
    """The study's pruner (None: reports are kept, nothing is stopped)."""
    return make_pruner(config.pruner, eta=config.eta, min_resource=config.min_epochs, max_resource=config.epochs)


def outcome_of(trial: Trial, seed: int, objectives, value) -> SeedOutcome:
    """The recorded outcome of one call: what `ObjectiveCall` returned, or a `CallFailure`."""
    if isinstance(value, CallFailure):
        return SeedOutcome(trial.arch_id, seed, "failed", error=value.message[:500], error_kind=value.kind,
                           seconds=value.seconds)
    attrs = value.get("user_attrs") or None
    first = objectives[0].name
    fills_valid = first == "valid_acc" or all(o.name != "valid_acc" for o in objectives)
    if value["status"] == "failed":
        return SeedOutcome(trial.arch_id, seed, "failed", error=value["error"], error_kind=E_EXCEPTION,
                           seconds=value.get("seconds"), user_attrs=attrs)
    if value["status"] == "pruned":  # its last report is its value, as a lower rung's
        last = value.get("last")
        last = None if last is None or math.isnan(last) else last
        return SeedOutcome(trial.arch_id, seed, "pruned", valid_acc=last if fills_valid else None,
                           seconds=value.get("seconds"), epochs=value.get("step"),
                           error=f"pruned at step {value.get('step')}", user_attrs=attrs,
                           objectives={first: last} if last is not None else None)
    values = value["values"]
    if any(math.isnan(v) or math.isinf(v) for v in values.values()):
        return SeedOutcome(trial.arch_id, seed, "diverged", error="the objective returned NaN or infinity",
                           error_kind="diverged", seconds=value.get("seconds"), user_attrs=attrs)
    signal = values.get("valid_acc", values.get(first) if fills_valid else None)
    return SeedOutcome(trial.arch_id, seed, "ok", valid_acc=signal, test_acc=value.get("test_acc"),
                       seconds=value.get("seconds"), objectives=values, user_attrs=attrs)


class ReportDesk:
    """The driver's side of `arch.report`: records each report (`Reports`), asks the pruner, and
    hands the reports to the store from the loop's thread (`flush`)."""

    def __init__(self):
        self.reports = Reports()
        self.pruner = None
        self.store = None
        self.lock = threading.Lock()

    def bind(self, store, config) -> None:
        objectives = of_config(config.objectives)
        self.store, self.pruner = store, pruner_of(config)
        self.reports = Reports(objectives[0].direction)
        done = {(r["arch_id"], s["seed"]) for r in store.records(with_text=False)
                for s in r["seeds"] if s.get("status") == "ok"}
        self.reports.load(store.reports(), done)

    def answer(self, message) -> bool:
        """A channel's question: ("report", arch_id, seed, step, value) -> whether to prune."""
        try:
            _kind, arch_id, seed, step, value = message
            with self.lock:
                self.reports.add((arch_id, seed), int(step), float(value))
                return bool(self.pruner is not None and self.pruner.prune(self.reports, (arch_id, seed), int(step)))
        except Exception:  # noqa: BLE001 - a malformed question must not stop the driver; the trial goes on
            return False

    def finished(self, outcome: SeedOutcome) -> None:
        self.reports.finish((outcome.arch_id, outcome.seed), outcome.status == "ok")

    def flush(self) -> None:
        rows = self.reports.take_unsaved()
        if rows and self.store is not None:
            self.store.add_reports(rows)


class FunctionEvaluator(Evaluator):
    """Calls `objective(arch)` once per seed: in this thread (`executor=None`, one job), or on
    `n_jobs` threads, worker processes or Ray tasks (`executor="thread" | "process" | "ray"`;
    `address` joins a Ray cluster, `resources` is what each task holds). An exception from the
    function is a failed trial (its type and message recorded); KeyboardInterrupt stops the search
    (a resume continues)."""

    def __init__(self, objective: Callable, *, n_jobs: int = 1, executor: Optional[str] = None,
                 address: Optional[str] = None, resources: Optional[dict] = None):
        self.objective, self.n_jobs, self.kind = objective, n_jobs, executor
        self.address, self.resources = address, resources
        self.capacity = n_jobs
        self.desk = ReportDesk()
        self.config = self.store = self.executor = self.calls = None
        self.objectives: tuple = ()
        self.tickets: Dict[int, tuple] = {}  # ticket -> (trial, seed, attempt)

    def bind(self, store, config) -> None:
        self.config, self.store = config, store
        self.objectives = of_config(config.objectives)
        self.desk.bind(store, config)
        kind = self.kind
        if kind is None:  # one job here; several on threads (Optuna's default); a timeout needs a process to kill
            kind = "process" if config.trial_timeout is not None else "thread" if self.n_jobs > 1 else "inline"
        self.executor, self.calls = make_calls(kind, workers=self.n_jobs, on_ask=self.desk.answer,
                                               timeout=config.trial_timeout, address=self.address,
                                               resources=self.resources)

    def submit(self, trial: Trial) -> None:
        for seed in trial.seeds:
            self._call(trial, seed, 1)

    def _call(self, trial: Trial, seed: int, attempt: int) -> None:
        call = ObjectiveCall(self.objective, stored_arch(self.config, self.store, trial, seed), self.objectives)
        self.tickets[self.calls.submit(call)] = (trial, seed, attempt)

    def pending(self) -> int:
        return self.calls.pending()

    def idle(self) -> int:
        return max(0, self.capacity - self.calls.pending())

    def wait(self, timeout=None) -> List[SeedOutcome]:
        out = []
        for ticket, value in self.calls.wait(timeout):
            trial, seed, attempt = self.tickets.pop(ticket)
            if isinstance(value, CallFailure) and value.kind == E_KILLED and attempt < CALL_ATTEMPTS:
                self.store.retry(trial.arch_id, [seed])  # its worker died: the architecture is not at fault
                self._call(trial, seed, attempt + 1)
                continue
            outcome = outcome_of(trial, seed, self.objectives, value)
            self.desk.finished(outcome)
            out.append(outcome)
        self.desk.flush()
        return out

    def close(self, abort: bool = False) -> None:
        try:
            if self.calls is not None:
                self.calls.close(abort=abort)
            self.desk.flush()
        finally:
            if self.executor is not None:
                self.executor.close()
