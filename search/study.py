"""The Python API: a study in Optuna's shape over the search's one loop and one store.

    import nader.search as ns

    def objective(arch):                 # arch.module(): the torch network; arch.text, arch.cell, ...
        return my_train_and_eval(arch.module()), arch.params
    study = ns.create_study(space="nb201", directions=["maximize", "minimize"], storage="runs/mine",
                            load_if_exists=True)
    study.optimize(objective, n_trials=20, n_jobs=4)   # threads; executor="process" | "ray"
    study.best_trials                    # the Pareto set

A study is a run directory: `optimize` is `run_search` with an evaluator that calls the user's
function (`FunctionEvaluator`: in this thread, or K at once on threads, processes or Ray), so the
CLI's `status`, `best`, `export` and `report` read a study made here, and `load_study` opens a run
the CLI made. One process, the driver, owns a study (the run's lock): parallelism is `n_jobs`.
`ask`/`tell` drive the same loop from the caller's side: the loop runs in a helper thread whose
evaluator hands each architecture to `ask` and waits for `tell`.
"""
from __future__ import annotations

import queue
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from nader.runtime.calls import DirectChannel
from nader.runtime.errors import ConfigError
from nader.runtime.lock import RunLocked

from . import records
from .config import merge
from .config_file import resolve_evaluator
from .evaluator import Evaluator, SeedOutcome, Trial
from .function_evaluator import FunctionEvaluator, ReportDesk, arch_of, outcome_of, stored_arch
from .loop import Observer, Stop
from .objective import Arch, TrialPruned, completed, finished
from .objectives import DIRECTIONS, Objective, parse_objectives, require_pymoo, value
from .progress import LiveProgress
from .session import run_search
from .settings import OPTIMIZE_KEYWORDS, read_keywords
from .store import RunReader
from .tree import TRIALS
from .trial_network import PYTHON as PYTHON_EVALUATOR  # the stored `evaluator` of a study a function evaluates
#: what a RunLocked from the API adds: a study has one driver; parallelism is within it
ONE_DRIVER = ("one process drives a study; to evaluate several architectures at once, give optimize(..., n_jobs=K) "
              "(threads, or executor='process'), or executor='ray' with address= for a cluster")


@dataclass
class StudyTrial:
    """A finished or asked architecture, read from the store."""

    number: int
    state: str  # the architecture's status: ok, pruned, failed, diverged, training, ...
    values: Optional[List[float]]  # one per objective, in the study's order (None if missing)
    text: Optional[str] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    record: dict = field(default_factory=dict)  # the whole record (`nader-search export`)
    arch: Optional[Arch] = None  # what the objective receives (read back: its first seed's call); None: no network

    @property
    def value(self) -> Optional[float]:
        return self.values[0] if self.values else None

    @property
    def user_attrs(self) -> dict:
        """What its objective kept with `arch.set_user_attr`."""
        return dict(self.record.get("user_attrs") or {})


class _AskTellEvaluator(Evaluator):
    """The evaluator of a loop driven by `ask`/`tell`: submitted trials go to `ask`, outcomes
    come from `tell`, each asked seed told once. After `close`, nothing is pending, so the loop
    stops (`closed`)."""

    capacity = 1

    def __init__(self):
        self.asked: "queue.Queue" = queue.Queue()
        self.told: "queue.Queue" = queue.Queue()
        self.out: set = set()  # (arch_id, seed) handed out and not told
        self.lock = threading.RLock()
        self.closed = False
        self.desk = ReportDesk()
        self.config = self.store = None

    def bind(self, store, config) -> None:
        self.config, self.store = config, store
        self.desk.bind(store, config)

    def submit(self, trial: Trial) -> None:
        with self.lock:
            self.out.update((trial.arch_id, seed) for seed in trial.seeds)
        for seed in trial.seeds:
            arch = stored_arch(self.config, self.store, trial, seed)
            arch._channel = DirectChannel(self.desk.answer)
            self.asked.put((trial, arch))

    def check(self, key: tuple) -> None:
        """Refuse a `tell` of `key` unless it was asked and not told yet."""
        with self.lock:
            if key not in self.out:
                raise ValueError(f"trial {key[0]} (seed {key[1]}) is not waiting for a result: it was told already, "
                                 f"or was not asked in this session")

    def take(self, key: tuple, outcome: SeedOutcome) -> None:
        """The outcome told for `key`, once (pending never drops to 0 between the two steps)."""
        with self.lock:
            self.check(key)
            self.out.discard(key)
            self.told.put(outcome)

    def pending(self) -> int:
        with self.lock:
            return 0 if self.closed else len(self.out) + self.told.qsize()

    def wait(self, timeout=None) -> List[SeedOutcome]:
        outcome = self.told.get()
        if outcome is None:  # closed
            return []
        self.desk.finished(outcome)
        self.desk.flush()
        return [outcome]

    def close(self, abort: bool = False) -> None:
        self.desk.flush()


class _Callbacks:
    """`optimize`'s callbacks (each `callback(study, trial)` as a trial finishes, Optuna's
    signature) and its progress display, as the loop's observer (an `Observer` by its hooks: the
    ones not written here are the progress display's)."""

    def __init__(self, study: "Study", callbacks: Sequence[Callable], progress: Optional[Observer] = None):
        self.study, self.callbacks, self.progress = study, list(callbacks), progress or Observer()
        self.loop = None

    def started(self, loop):
        self.loop = loop
        self.progress.started(loop)

    def finished(self, node):
        self.progress.finished(node)
        if self.callbacks:
            recs = records.records(self.loop.store, arch_id=node.arch_id)  # the writer: what was just committed
            trial = self.study._trial(recs[0])
            for callback in self.callbacks:
                callback(self.study, trial)

    def __getattr__(self, hook):  # recorded, submitted, seed_done, event: the progress display's
        return getattr(self.progress, hook)


class Study:
    """A search on a run directory, driven from Python. Use `create_study` or `load_study`."""

    def __init__(self, run_dir: Path, settings: dict, objectives: Sequence[Objective]):
        self.run_dir, self.settings, self.objectives = Path(run_dir), dict(settings), tuple(objectives)
        self._config = None
        self._driver: Optional[_Driver] = None

    # ------------------------------------------------------------------ the loop
    @property
    def directions(self) -> List[str]:
        return ["maximize" if o.direction == "max" else "minimize" for o in self.objectives]

    def config(self):
        if self._config is None:
            self._config = merge(self._stored(), self.settings)
        return self._config

    def optimize(self, objective: Optional[Callable] = None, n_trials: Optional[int] = None,
                 timeout: Optional[float] = None, n_jobs: int = 1, executor: Optional[str] = None,
                 address: Optional[str] = None, resources: Optional[dict] = None,
                 callbacks: Sequence[Callable] = (), show_progress_bar: bool = False):
        """Evaluate `n_trials` more architectures (the root counts as the first trial of a new
        study) with `objective(arch)`, or until `timeout` seconds; resumes where the run stopped.

        `n_jobs` objectives run at once (-1: one per CPU): on threads (the default for several),
        worker processes (`executor="process"`: the objective is shipped with cloudpickle) or Ray
        tasks (`executor="ray"`, `address=` a cluster's, `resources=` each task's, e.g.
        ``{"num_gpus": 0.25}``). The study's `trial_timeout` is enforced by killing the worker, so
        it needs a process or Ray (without an executor, a process is chosen). `callbacks` are
        called as ``callback(study, trial)`` when each trial finishes; `show_progress_bar` shows
        the CLI's progress (`--progress auto`: live on a terminal, a line per trial elsewhere).

        Without an objective, the study's own evaluator evaluates them (`create_study(evaluator=
        "training")` trains with the runtime, `"table:FILE"` looks them up), as `nader-search run`
        would. Returns the search's summary (`SearchSummary`)."""
        if self._driver is not None:
            raise RuntimeError("this study is being driven by ask/tell; call study.close() first")
        given = read_keywords({"n_jobs": n_jobs, "executor": executor, "address": address, "resources": resources},
                              "optimize", OPTIMIZE_KEYWORDS)
        for callback in callbacks:
            if not callable(callback):
                raise ConfigError(f"optimize: each callback is a function callback(study, trial), not {callback!r:.60}")
        more = {"trials": self._trials_done() + n_trials if n_trials else None, "time_limit": timeout}
        self._config = None
        evaluator = None
        if objective is None:
            if self.config().evaluator == PYTHON_EVALUATOR:
                raise ConfigError("this study's trials are evaluated by a Python function: pass it, "
                                  "study.optimize(objective, n_trials=N)")
            more.update(_training_executor(given))
        else:
            evaluator = FunctionEvaluator(objective, **given)
        progress = None
        if show_progress_bar:
            progress = LiveProgress(mode="auto")
        observer = _Callbacks(self, callbacks, progress) if (callbacks or progress) else None
        try:
            return run_search(self.settings, more, evaluator=evaluator, observer=observer,
                              command="nader.search.Study.optimize")
        except RunLocked as exc:
            raise RunLocked(f"{exc}; {ONE_DRIVER}") from None
        finally:
            if progress is not None:
                progress.close()

    def ask(self) -> StudyTrial:
        """The next architecture to evaluate (one per seed), for users who drive the loop."""
        if self._driver is None:
            self._driver = _Driver(self)
        try:
            trial, arch = self._driver.next()
        except BaseException:  # the loop ended (bad settings, the space exhausted): the next ask starts afresh
            self._driver = None
            raise
        return StudyTrial(trial.arch_id, "training", None, trial.text, arch.params, arch.flops, arch=arch)

    def tell(self, trial: StudyTrial, values: Any = None, state: str = "complete") -> None:
        """The result of an asked trial: its value(s) (or a dict by objective name, test_acc
        included), ``state="fail"``, or ``state="pruned"`` (its last `arch.report` is its value).
        Each asked trial is told once: a second tell is refused (ValueError)."""
        if self._driver is None:
            raise RuntimeError("tell() without ask(): nothing is waiting for a result")
        if state not in ("complete", "fail", "pruned"):
            raise ValueError(f"tell: state is complete, fail or pruned, not {state!r:.40}")
        arch = trial.arch
        if arch is None:
            raise ValueError("tell: give the trial ask() returned")
        self._driver.evaluator.check((trial.number, arch.seed))  # a second tell, before its values are read
        out = {"status": "failed", "error": "failed (told)"} if state == "fail" else \
            {"status": "pruned"} if state == "pruned" else completed(values, self.objectives)
        t = Trial(trial.number, trial.text, arch.widths, [arch.seed])
        self._driver.tell((trial.number, arch.seed), outcome_of(t, arch.seed, self.objectives, finished(out, arch, None)))

    def close(self):
        """End an ask/tell session: the loop stops (an asked, untold architecture is asked again
        on resume) and the run directory is released. Returns its summary, or None."""
        driver, self._driver = self._driver, None
        return driver.close() if driver is not None else None

    # ------------------------------------------------------------------ reading
    @property
    def trials(self) -> List[StudyTrial]:
        """Every architecture sent to evaluation, in id order."""
        return [self._trial(r) for r in self._records() if r["status"] in TRIALS]

    @property
    def best_trials(self) -> List[StudyTrial]:
        """The non-dominated trials (one objective: the best ones, ties included)."""
        with self._open() as reader:
            front = records.pareto(reader, [str(o) for o in self.objectives])
        return [self._trial(r) for r in front]

    @property
    def best_trial(self) -> StudyTrial:
        if len(self.objectives) > 1:
            raise RuntimeError("a study with several objectives has no single best trial; read best_trials")
        best = self.best_trials
        if not best:
            raise ValueError("no trial has finished yet")
        return best[0]

    @property
    def best_value(self) -> float:
        return self.best_trial.value

    def trials_dataframe(self):
        """One row per trial: number, state, each objective (values_NAME), params, flops, test_acc,
        seconds, parent, and each user attribute (user_attrs_KEY). A pandas DataFrame when pandas
        is installed, else a list of dicts."""
        rows = []
        for t in self.trials:
            row = {"number": t.number, "state": t.state}
            for o, v in zip(self.objectives, t.values or [None] * len(self.objectives)):
                row[f"values_{o.name}"] = v
            row.update(params=t.params, flops=t.flops, test_acc=t.record.get("test_acc"),
                       seconds=t.record.get("seconds"), parent=t.record.get("parent_id"))
            row.update({f"user_attrs_{k}": v for k, v in sorted(t.user_attrs.items())})
            rows.append(row)
        try:
            import pandas
        except ImportError:
            return rows
        return pandas.DataFrame(rows)

    # ------------------------------------------------------------------ helpers
    def _open(self) -> RunReader:
        """The run, read (the quick integrity check: `load_study` has run the full one)."""
        return RunReader(self.run_dir, full_check=False)

    def _stored(self) -> Optional[dict]:
        if not (self.run_dir / "runs.sqlite").exists():
            return None
        with self._open() as reader:
            return reader.stored_config() or None

    def _records(self) -> List[dict]:
        if not (self.run_dir / "runs.sqlite").exists():
            return []
        with self._open() as reader:
            return records.records(reader)

    def _trials_done(self) -> int:
        return sum(1 for r in self._records() if r["status"] in TRIALS)

    def _trial(self, rec: dict) -> StudyTrial:
        values = None
        if rec["status"] in ("ok", "pruned"):  # a pruned one: its last report, of the first objective
            values = [value(rec, o.name) for o in self.objectives]
        return StudyTrial(rec["arch_id"], rec["status"], values, rec.get("text"), rec.get("params"),
                          rec.get("flops"), rec, self._arch_of_record(rec))

    def _arch_of_record(self, rec: dict) -> Optional[Arch]:
        """A trial read back as its objective saw it (its first seed's call); None without a network."""
        if not rec.get("text") or not rec.get("widths"):
            return None
        seeds = [s["seed"] for s in rec.get("seeds") or () if isinstance(s, dict) and isinstance(s.get("seed"), int)]
        trial = Trial(rec["arch_id"], rec["text"], rec["widths"], seeds or self.config().resolved_seeds()[:1])
        return arch_of(self.config(), trial, trial.seeds[0], rec.get("params"), rec.get("flops"))

    def export(self, trial=None, format: str = "nad", path=None, weights=None, seed: Optional[int] = None) -> List[Path]:
        """Write `trial` (a StudyTrial or its number; None: the best) as `format` (nad, torch, onnx)
        to `path`, at the widths it was searched with, and OUT.json stating its input and
        normalisation; `weights`: True for the weights the objective saved (arch.save_weights)
        or a training's checkpoint, as PATH.pt (onnx: its initializers), or the path to write them to.
        As `nader-search best --emit`: the paths written; `best_model.ExportError` says why not."""
        from .best_model import export

        number = trial.number if isinstance(trial, StudyTrial) else trial
        if path is None:
            raise ValueError("export: give the path to write (path=...)")
        with RunReader(self.run_dir) as reader:
            return export(self.run_dir, reader, format, Path(path), weights=weights or False, trial=number,
                          seed=seed).paths


class _Driver:
    """The loop of an ask/tell study, in a helper thread (the store is opened there)."""

    def __init__(self, study: Study):
        self.evaluator = _AskTellEvaluator()
        self.summary = None
        self.error: Optional[BaseException] = None
        self.done = threading.Event()
        closed = lambda loop: self._closed_stop()  # noqa: E731
        self._stopping = False

        def run():
            try:
                self.summary = run_search(study.settings, {"trials": 10 ** 9}, evaluator=self.evaluator,
                                          stop_checks=[closed], command="nader.search.Study.ask")
            except BaseException as exc:  # handed to the caller's thread by next() / close()
                self.error = exc
            finally:
                self.done.set()
                self.evaluator.asked.put(None)

        self.thread = threading.Thread(target=run, name="nader-study", daemon=True)
        self.thread.start()

    def _closed_stop(self):
        return Stop("closed", "the ask/tell session was closed") if self._stopping else None

    def next(self):
        item = self.evaluator.asked.get()
        if item is None:
            if isinstance(self.error, RunLocked):
                raise RunLocked(f"{self.error}; {ONE_DRIVER}") from None
            if self.error is not None:
                raise self.error
            raise RuntimeError(f"the search stopped: {self.summary.stop.message if self.summary else 'no reason'}")
        return item

    def tell(self, key: tuple, outcome: SeedOutcome) -> None:
        if self.done.is_set() and self.error is not None:
            raise self.error
        self.evaluator.take(key, outcome)

    def close(self):
        self._stopping = True
        self.evaluator.closed = True
        self.evaluator.told.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.summary


def _training_executor(given: dict) -> dict:
    """`optimize`'s n_jobs and executor for a study the runtime trains (no objective): the pool's
    workers, or Ray's."""
    kind = given.get("executor")
    if kind == "thread":
        raise ConfigError("the runtime trains in processes: give executor='process' (its pool) or 'ray'")
    if kind is None and given.get("n_jobs", 1) == 1:
        return {}
    return {"executor": "ray" if kind == "ray" else "pool", "workers": given.get("n_jobs", 1),
            **({"address": given["address"]} if given.get("address") else {})}


def _objectives(directions, objectives) -> tuple:
    if objectives:
        return parse_objectives(objectives)
    directions = list(directions or ["maximize"])
    bad = [d for d in directions if str(d).lower() not in DIRECTIONS]
    if bad:
        raise ConfigError(f"directions: each is maximize or minimize, not {bad[0]!r}")
    dirs = [DIRECTIONS[str(d).lower()] for d in directions]
    names = ["valid_acc" if i == 0 and d == "max" else f"value_{i}" for i, d in enumerate(dirs)]
    return tuple(Objective(n, d) for n, d in zip(names, dirs))


def create_study(*, storage: str, study_name: Optional[str] = None, space: str = "language",
                 directions: Optional[Sequence[str]] = None, objectives: Optional[Sequence[str]] = None,
                 load_if_exists: bool = False, strategy: str = "rea", options: Optional[dict] = None,
                 root: Optional[str] = None, seed: int = 0, evaluator: str = PYTHON_EVALUATOR, **settings) -> Study:
    """A new study in the run directory `storage` (`storage/study_name` when named).

    `directions` ("maximize"/"minimize", Optuna's spelling) name the objectives valid_acc (a
    first "maximize") and value_1, value_2, ...; `objectives` names them instead
    (``["valid_acc:max", "params:min"]``; params and flops may be left out of the function's return:
    the compiler counts them). `strategy` and `options` as ``--strategy``/``--option``; `root` is a
    .nad path (the block language) or a NAS-Bench-201 string; other keyword arguments are the
    search's settings by their API keyword (dataset, seeds, max_params, ...: `search/settings.py`),
    each read and checked as its flag is, so a refused value is a ConfigError with the flag's reason. `evaluator` is ``"python"`` (the function
    given to `optimize`), ``"training"`` (the runtime trains each architecture, as the CLI does), a
    table (``"nats-bench:FILE"``, ``"table:FILE"``) or a registered evaluator's name. With
    `load_if_exists`, an existing study there is opened (its settings must match, as a CLI
    resume's must). Several objectives need pymoo, refused here without it."""
    run_dir = Path(storage) / study_name if study_name else Path(storage)
    chosen = _objectives(directions, objectives)
    require_pymoo(chosen)
    if (run_dir / "runs.sqlite").exists() and not load_if_exists:
        raise ConfigError(f"{run_dir} holds a study already; pass load_if_exists=True to continue it, or "
                          f"choose another storage or study_name")
    values = read_keywords(dict(settings, space=space, strategy=strategy, options=dict(options or {}), seed=seed,
                                evaluator=evaluator))
    values.update(run_dir=str(run_dir), objectives=[str(o) for o in chosen])
    if evaluator != PYTHON_EVALUATOR:
        values["evaluator"] = resolve_evaluator(values["evaluator"])
    if root is not None:
        text = str(root) if isinstance(root, str) else None
        keyword = "root_text" if text is not None and (text.strip().startswith("|") or "\n" in text) else "root"
        values.update(read_keywords({keyword: root}))
    return Study(run_dir, values, chosen)


def load_study(storage: str, study_name: Optional[str] = None) -> Study:
    """The study (or CLI search) in a run directory, as it was stored. The store gets SQLite's
    full check once: an index that disagrees with its table is a warning (RuntimeWarning) naming
    the repair, as the CLI's readers print it; `optimize` would refuse such a store."""
    run_dir = Path(storage) / study_name if study_name else Path(storage)
    if not (run_dir / "runs.sqlite").exists():
        raise ConfigError(f"{run_dir} holds no study (no runs.sqlite)")
    with RunReader(run_dir, fix=f"`nader-search status {run_dir} --repair`") as reader:
        stored = reader.stored_config()
    for line in reader.warnings:
        warnings.warn(line, RuntimeWarning, stacklevel=2)
    study = Study(run_dir, {"run_dir": str(run_dir)}, ())
    study.objectives = parse_objectives(stored.get("objectives") or ["valid_acc:max"])
    return study


__all__ = ["Arch", "FunctionEvaluator", "Study", "StudyTrial", "TrialPruned", "create_study", "load_study"]
