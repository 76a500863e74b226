"""`run_search`: one invocation of a search on a run directory, from settings to summary.

It takes the run directory's lock (a second process refuses and touches nothing), opens the
store, merges the settings stored there with the ones given (a resume may leave everything out),
refuses a change of identity unless ``force``, binds the strategy to the search's context,
records a session row, builds the executor and evaluator, runs the loop and closes everything
(the strategy last), also on Ctrl-C.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

from nader.agents.llm.errors import LLMConfigError
from nader.inputs import InputError
from nader.runtime.errors import ConfigError, DatasetError
from nader.runtime.executors import make_executor
from nader.runtime.faults import InfrastructureError
from nader.runtime.integrity import StoreError
from nader.runtime.lock import RunLock
from nader.runtime.outputs import CHECKPOINTS
from nader.runtime.presets import get_preset

from . import records
from .config import SearchConfig, differences, merge
from .evaluator import TrainingEvaluator
from .tables.base import TableError
from .tables.lookup import TableEvaluator
from .loop import Observer, SearchLoop, Stop, StopCheck, search_context
from .preflight import check_rungs, preflight
from .prescreen import Prescreener
from .registry import evaluator_factory
from .store import SearchStore
from .strategies import get_strategy
from .tree import Tree


@dataclass
class SearchSummary:
    run_dir: str
    stop: Stop
    trials: int
    counts: dict
    best: Optional[dict]
    seconds: float
    resumed: bool
    warnings: list = field(default_factory=list)
    failures: list = field(default_factory=list)  # why trials failed, grouped (`records.failures`)
    proxies: Optional[dict] = None  # this session's proxy scoring (`Proxies.stats`), when the run scores any

    def to_json(self) -> dict:
        best = None
        if self.best:
            keys = ("arch_id", "parent_id", "depth", "operator", "change", "params", "flops", "widths", "valid_acc",
                    "valid_std", "test_acc", "test_std", "seconds", "text", "objectives")
            best = {k: self.best.get(k) for k in keys}
        return {"run_dir": self.run_dir, "stop_reason": self.stop.code, "stop_message": self.stop.message,
                "trials": self.trials, "counts": self.counts, "resumed": self.resumed,
                "seconds": round(self.seconds, 3), "best": best, "warnings": self.warnings,
                "failures": self.failures, "proxies": self.proxies}


def _layer(x) -> dict:
    if x is None:
        return {}
    if isinstance(x, SearchConfig):
        return x.to_record() | ({"run_dir": x.run_dir} if x.run_dir else {})
    return dict(x)


def _check_rungs(config: SearchConfig, evaluator) -> None:
    """Every rung of a multi-fidelity search answered by the table (`preflight.check_rungs`)."""
    check_rungs(config, evaluator.table, evaluator.dataset)


def make_evaluator(config: SearchConfig, store: SearchStore, depths, on_event=None):
    """(executor, evaluator): training on the configured executor, or a tabular benchmark's
    table (`--evaluator nats-bench:PATH`; no executor)."""
    kind = (config.evaluator or "").partition(":")[0]
    if kind == "python":
        raise ConfigError("this study's trials are evaluated by a Python objective function; resume it from Python: "
                          "nader.search.load_study(RUN_DIR).optimize(objective, n_trials=N)")
    factory = evaluator_factory(kind)
    if factory is not None:
        return None, factory(config, store, depths)
    if config.evaluator:
        try:
            evaluator = TableEvaluator.open(config.evaluator, config.dataset,
                                            config.epochs or get_preset(config.preset).epochs, config.table_map)
        except TableError as exc:
            raise ConfigError(str(exc)) from None
        _check_rungs(config, evaluator)
        return None, evaluator

    kind = "inprocess" if config.executor == "local" else config.executor
    options = config.job_options()
    if any(o.split(":")[0] == "latency" for o in config.objectives or ()):
        options["latency"] = True  # the runtime measures it after training, on the training device
    executor = make_executor(kind, workers=config.workers, address=config.address, device=config.device,
                             timeout=config.trial_timeout, trials_per_gpu=config.trials_per_gpu)
    try:
        evaluator = TrainingEvaluator(executor, store, skeleton=config.skeleton, dataset=config.dataset,
                                      preset=config.preset, depths=depths, data_dir=config.data_dir,
                                      options=options, builder=config.builder, on_event=on_event)
    except BaseException:
        executor.close()
        raise
    return executor, evaluator


def run_search(*layers: Union[dict, SearchConfig, None], force: bool = False, observer: Optional[Observer] = None,
               stop_checks: Sequence[StopCheck] = (), command: Optional[str] = None, strategy=None,
               evaluator=None) -> SearchSummary:
    """Run (or resume) a search. `layers` are settings (SearchConfig fields), later ones winning
    over earlier ones and over the settings stored in the run directory.

    `strategy` may be a Strategy instance to use instead of the configured one (its `name`
    must match the configuration's strategy). `evaluator` may be an Evaluator to use instead of
    training (a tabular benchmark); the search closes it at the end. Raises ConfigError for bad
    settings or a change of identity, RunLocked when another process holds the run directory,
    KeyboardInterrupt after a clean stop.
    """
    given_layers = [_layer(x) for x in layers]
    given = merge(*given_layers)
    run_dir = Path(given.run_dir or given.default_run_dir())
    if given.root_text is not None or not (run_dir / "runs.sqlite").exists():
        given.check()  # before anything is created; a resume may take its root from the run directory
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    lock = RunLock(run_dir).acquire()
    forget = False
    try:
        new = not (run_dir / "runs.sqlite").exists()
        store = SearchStore(run_dir)
        try:
            return _run_locked(store, run_dir, given_layers, force, observer, stop_checks, command, strategy,
                               evaluator, t0)
        except REFUSALS:
            if new and not store.nodes():  # settings refused at the start: leave no run behind to trip the next one
                store.close()
                _forget_new_run(run_dir)
                forget = True
            raise
        finally:
            store.close()
    finally:
        lock.release(remove=forget)  # the lock file too: a refused new run leaves nothing
        if forget and created:
            with contextlib.suppress(OSError):
                run_dir.rmdir()  # only when empty: nothing of anyone else's is removed


#: what refuses a search's start: bad settings, a missing dataset, an `[llm]` configuration, a bad file
REFUSALS = (ConfigError, DatasetError, LLMConfigError, InputError)


def _forget_new_run(run_dir: Path) -> None:
    """Remove the database a refused start created (nothing was recorded in it), and its empty
    checkpoint folder."""
    for name in ("runs.sqlite", "runs.sqlite-wal", "runs.sqlite-shm", "runs.sqlite-journal"):
        with contextlib.suppress(OSError):
            (run_dir / name).unlink()
    with contextlib.suppress(OSError):
        (run_dir / CHECKPOINTS).rmdir()


def _run_locked(store, run_dir, given_layers, force, observer, stop_checks, command, strategy, evaluator, t0):
    stored = store.config()
    if stored is not None and "repair" not in stored:
        stored = {**stored, "repair": "off"}  # a run from before `--repair` made no repairs; it resumes so
    if stored is not None and "root_mode" not in stored:  # a run from before --root trained its root
        stored = {**stored, "root_mode": "train"}
    config = merge(stored, *given_layers)
    config.run_dir = str(run_dir)
    config.check()
    warnings = []
    resumed = stored is not None and bool(store.nodes())
    if stored is not None:
        changed = differences(SearchConfig.from_record(stored).identity(), config.identity())
        if changed and not force:
            raise ConfigError(f"{run_dir} holds a search with other settings ({'; '.join(changed)}); run it with "
                              f"the same settings to resume, choose another --run-dir, or pass --force to continue "
                              f"this tree with the new settings")
        if changed:
            warnings.append(f"continuing with changed settings: {'; '.join(changed)}")
    warnings += preflight(config, own_evaluator=evaluator is not None)  # what every trial needs, before any
    store.set_config(config.to_record())
    if strategy is None:
        strategy = get_strategy(config.strategy)(**config.strategy_options)
    elif strategy.name != config.strategy:
        raise ConfigError(f"the strategy object is {strategy.name!r} but the configuration says {config.strategy!r}")
    context = search_context(config, store)
    try:
        strategy.bind(context)  # a missing knowledge base or endpoint is refused before anything trains
        return _run_bound(store, run_dir, config, context, strategy, evaluator, observer, stop_checks, command,
                          resumed, warnings, t0)
    finally:
        strategy.close()
        if context.proxies is not None:
            context.proxies.close()


def _run_bound(store, run_dir, config, context, strategy, evaluator, observer, stop_checks, command, resumed,
               warnings, t0):
    prescreener = Prescreener(context.proxies) if config.prescreen > 1 else None
    obs = observer or Observer()
    depths = list(context.depths)
    trials_before = Tree(store.nodes()).trials()
    bind = getattr(evaluator, "bind", None)  # an evaluator of the interface's shape may lack the hook
    if bind is not None:
        bind(store, config)  # refuses here what it cannot run (ConfigError), before a session starts
    try:
        session = store.begin_session(config.to_record(), command or " ".join(sys.argv), os.getpid(), trials_before)
    except BaseException:
        if evaluator is not None:
            evaluator.close(abort=True)
        raise
    executor = None
    if evaluator is None:
        executor, evaluator = make_evaluator(config, store, depths, on_event=obs.event)
        warnings += getattr(evaluator, "warnings", [])
    loop = SearchLoop(config, store, evaluator, strategy, observer=obs, stop_checks=stop_checks, session=session,
                      prescreener=prescreener, context=context)
    try:
        stop = loop.run()
    except KeyboardInterrupt:
        _close(evaluator, executor, abort=True)
        _end_anyway(store, session, "interrupted", loop.tree.trials())
        raise
    except (InfrastructureError, StoreError):  # disk full and the like: the trial is retried on resume
        _close(evaluator, executor, abort=True)
        _end_anyway(store, session, "infrastructure", loop.tree.trials())
        raise
    except BaseException:
        _close(evaluator, executor, abort=True)
        _end_anyway(store, session, "error", loop.tree.trials())
        raise
    _close(evaluator, executor, abort=False)
    store.end_session(session, stop.code, loop.tree.trials())
    damaged: list = []  # cells that could not be read, as warnings
    best = records.best(store, damaged)
    warnings = list(dict.fromkeys(warnings + store.problems + damaged))
    used = context.proxies.stats() if context.proxies is not None and config.uses_proxy() else None
    return SearchSummary(str(run_dir), stop, loop.tree.trials(), store.counts(), best,
                         time.monotonic() - t0, resumed, warnings, records.failures(store), used)


def _end_anyway(store, session, reason: str, trials: int) -> None:
    """Record why the session ended, unless the database cannot take it (the disk that stopped
    the run may be full): the error that stopped it is what the user must see."""
    try:
        store.end_session(session, reason, trials)
    except StoreError:
        pass


def _close(evaluator, executor, abort: bool) -> None:
    try:
        evaluator.close(abort=abort)
    finally:
        if executor is not None:
            executor.close()
