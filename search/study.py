"""The Python API: a study in Optuna's shape over the search's one loop and one store.

    import nader.search as ns

    def objective(arch):                 # arch.module(): the torch network; arch.text, arch.cell, ...
        return my_train_and_eval(arch.module()), arch.params
    study = ns.create_study(space="nb201", directions=["maximize", "minimize"], storage="runs/mine",
                            load_if_exists=True)
    study.optimize(objective, n_trials=20)
    study.best_trials                    # the Pareto set

A study is a run directory: `optimize` is `run_search` with an evaluator that calls the user's
function (`FunctionEvaluator`), so the CLI's `status`, `best`, `export` and `report` read a study
made here, and `load_study` opens a run the CLI made. `ask`/`tell` drive the same loop from the
caller's side: the loop runs in a helper thread whose evaluator hands each architecture to `ask`
and waits for `tell`.
"""
from __future__ import annotations

import math
import queue
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from nader.compiler.network import build_network
from nader.compiler.plan import resolve_depths
from nader.compiler.skeletons import skeleton_info
from nader.runtime.errors import ConfigError

from . import records
from .config import merge
from .config_file import resolve_evaluator
from .evaluator import Evaluator, SeedOutcome, Trial
from .loop import Stop
from .objectives import DIRECTIONS, Objective, parse_objectives, require_pymoo, value
from .session import run_search
from .settings import read_keywords
from .spaces import nb201
from .store import RunReader
from .tree import TRIALS

from .trial_network import PYTHON as PYTHON_EVALUATOR  # the stored `evaluator` of a study a function evaluates
from .weights import save_weights
COUNTED = ("params", "flops")  # objectives the compiler counts: the objective function may leave them out


@dataclass
class Arch:
    """What an objective function receives: one architecture to evaluate, with what rebuilds it."""

    number: int  # the architecture's id in the run (0 is the root)
    text: str  # the whole architecture (.nad)
    skeleton: str
    dataset: str
    depths: List[int]
    widths: Optional[List[int]]
    params: Optional[int]
    flops: Optional[int]
    seed: int  # the seed this evaluation is for (one call per seed)
    cell: Optional[str] = None  # a NAS-Bench-201 cell string (`--space nb201`), else None
    epochs: Optional[int] = None  # a multi-fidelity rung's epochs; None: the configured budget
    run_dir: Optional[Path] = None  # the study's run directory, where save_weights writes

    def module(self):
        """The torch network built for the skeleton, dataset, depths and fitted widths."""
        return build_network(self.text, self.skeleton, self.dataset, widths=self.widths, depths=self.depths)[0]

    def save_weights(self, module, *, mean=None, std=None) -> Path:
        """Hand over the trained network (or its state_dict) of this evaluation, for `best --emit
        --weights` and `Study.export(..., weights=True)`; `mean` and `std` (per input channel) state
        the normalisation it was fed. `RUN/checkpoints/arch-N-seed-S.pt` (nader.search.weights)."""
        if self.run_dir is None:
            raise ValueError("this Arch belongs to no study's run directory")
        return save_weights(self.run_dir, self.number, self.seed, module, mean=mean, std=std)


@dataclass
class StudyTrial:
    """A finished or asked architecture, read from the store."""

    number: int
    state: str  # the architecture's status: ok, failed, diverged, training, ...
    values: Optional[List[float]]  # one per objective, in the study's order (None if missing)
    text: Optional[str] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    record: dict = field(default_factory=dict)  # the whole record (`nader-search export`)
    arch: Optional[Arch] = None  # what the objective receives (read back: its first seed's call); None: no network

    @property
    def value(self) -> Optional[float]:
        return self.values[0] if self.values else None


def _as_values(result: Any, objectives: Sequence[Objective], arch: Arch) -> dict:
    """The objective function's return as {name: value}. It returns one value per objective, or
    one per objective other than params and flops (those then come from the compiler)."""
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    names = [o.name for o in objectives]
    if len(values) != len(names):
        names = [n for n in names if n not in COUNTED]
        if len(values) != len(names):
            raise ValueError(f"the objective returned {len(values)} value(s) for {len(objectives)} objective(s) "
                             f"({', '.join(map(str, objectives))})")
    out = {}
    for name, v in zip(names, values):
        if isinstance(v, (bool, str, bytes)) or not hasattr(v, "__float__"):  # numpy and torch scalars pass
            raise ValueError(f"objective {name}: expected a number, got {v!r:.60}")
        out[name] = float(v)
    return out


def _outcome(trial: Trial, seed: int, objectives, result=None, error: Optional[BaseException] = None) -> SeedOutcome:
    if error is not None:
        return SeedOutcome(trial.arch_id, seed, "failed", error=f"{type(error).__name__}: {error}"[:500],
                           error_kind="exception")
    values = result
    if any(math.isnan(v) or math.isinf(v) for v in values.values()):
        return SeedOutcome(trial.arch_id, seed, "diverged", error="the objective returned NaN or infinity",
                           error_kind="diverged")
    signal = values.get("valid_acc", values[objectives[0].name] if objectives[0].name in values else None)
    return SeedOutcome(trial.arch_id, seed, "ok", valid_acc=signal, objectives=values)


class FunctionEvaluator(Evaluator):
    """The loop's evaluator for a Python objective: one call per seed, in this thread. An
    exception from the function is a failed trial (its type and message recorded), as every
    failure is in the search; KeyboardInterrupt stops the search (a resume continues)."""

    capacity = 1

    def __init__(self, objective: Callable, study: "Study"):
        self.objective, self.study = objective, study
        self.queue: List[Trial] = []

    def submit(self, trial: Trial) -> None:
        self.queue.append(trial)

    def pending(self) -> int:
        return len(self.queue)

    def wait(self, timeout=None) -> List[SeedOutcome]:
        trial = self.queue.pop(0)
        out = []
        for seed in trial.seeds:
            arch = self.study.arch_of(trial, seed)
            try:
                values = _as_values(self.objective(arch), self.study.objectives, arch)
            except Exception as exc:  # the user's code: a failed trial, as any evaluation failure
                out.append(_outcome(trial, seed, self.study.objectives, error=exc))
                continue
            out.append(_outcome(trial, seed, self.study.objectives, values))
        return out


class _AskTellEvaluator(Evaluator):
    """The evaluator of a loop driven by `ask`/`tell`: submitted trials go to `ask`, outcomes
    come from `tell`. After `close`, nothing is pending, so the loop stops (`closed`)."""

    capacity = 1

    def __init__(self):
        self.asked: "queue.Queue" = queue.Queue()
        self.told: "queue.Queue" = queue.Queue()
        self.out = 0  # seed evaluations handed out and not told
        self.closed = False

    def submit(self, trial: Trial) -> None:
        self.out += len(trial.seeds)
        for seed in trial.seeds:
            self.asked.put((trial, seed))

    def pending(self) -> int:
        return 0 if self.closed else self.out

    def wait(self, timeout=None) -> List[SeedOutcome]:
        outcome = self.told.get()
        if outcome is None:  # closed
            return []
        self.out -= 1
        return [outcome]


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

    def arch_of(self, trial: Trial, seed: int, node: Optional[dict] = None) -> Arch:
        c = self.config()
        cell = None
        if c.space == "nb201":
            try:
                cell = str(nb201.cell_of_text(trial.text))
            except nb201.NotInSpace:
                cell = None
        node = self._node(trial.arch_id) if node is None else node
        return Arch(trial.arch_id, trial.text, c.skeleton, c.dataset,
                    list(resolve_depths(skeleton_info(c.skeleton), c.depths)), trial.widths,
                    node.get("params"), node.get("flops"), seed, cell, trial.epochs, run_dir=self.run_dir)

    def optimize(self, objective: Optional[Callable] = None, n_trials: Optional[int] = None,
                 timeout: Optional[float] = None):
        """Evaluate `n_trials` more architectures (the root counts as the first trial of a new
        study) with `objective(arch)`, or until `timeout` seconds; resumes where the run stopped.
        Without an objective, the study's own evaluator evaluates them (`create_study(evaluator=
        "training")` trains with the runtime, `"table:FILE"` looks them up), as `nader-search run`
        would. Returns the search's summary (`SearchSummary`)."""
        if self._driver is not None:
            raise RuntimeError("this study is being driven by ask/tell; call study.close() first")
        more = {"trials": self._trials_done() + n_trials if n_trials else None, "time_limit": timeout}
        self._config = None
        if objective is None:
            if self.config().evaluator == PYTHON_EVALUATOR:
                raise ConfigError("this study's trials are evaluated by a Python function: pass it, "
                                  "study.optimize(objective, n_trials=N)")
            return run_search(self.settings, more, command="nader.search.Study.optimize")
        return run_search(self.settings, more, evaluator=FunctionEvaluator(objective, self),
                          command="nader.search.Study.optimize")

    def ask(self) -> StudyTrial:
        """The next architecture to evaluate (one per seed), for users who drive the loop."""
        if self._driver is None:
            self._driver = _Driver(self)
        try:
            trial, seed = self._driver.next()
        except BaseException:  # the loop ended (bad settings, the space exhausted): the next ask starts afresh
            self._driver = None
            raise
        arch = self.arch_of(trial, seed)
        return StudyTrial(trial.arch_id, "training", None, trial.text, arch.params, arch.flops, arch=arch)

    def tell(self, trial: StudyTrial, values: Any = None, state: str = "complete") -> None:
        """The result of an asked trial: its value(s), or ``state="fail"``."""
        if self._driver is None:
            raise RuntimeError("tell() without ask(): nothing is waiting for a result")
        t = Trial(trial.number, trial.text, trial.arch.widths, [trial.arch.seed])
        if state == "fail":
            outcome = _outcome(t, trial.arch.seed, self.objectives, error=RuntimeError("failed (told)"))
        else:
            outcome = _outcome(t, trial.arch.seed, self.objectives, _as_values(values, self.objectives, trial.arch))
        self._driver.tell(outcome)

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
        """One row per trial: number, state, each objective (values_NAME), params, flops, test_acc.
        A pandas DataFrame when pandas is installed, else a list of dicts."""
        rows = []
        for t in self.trials:
            row = {"number": t.number, "state": t.state}
            for o, v in zip(self.objectives, t.values or [None] * len(self.objectives)):
                row[f"values_{o.name}"] = v
            row.update(params=t.params, flops=t.flops, test_acc=t.record.get("test_acc"),
                       seconds=t.record.get("seconds"), parent=t.record.get("parent_id"))
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

    def _node(self, arch_id: int) -> dict:
        with self._open() as reader:
            node = reader.node(arch_id)
        return {"params": node.params, "flops": node.flops} if node is not None else {}

    def _trials_done(self) -> int:
        return sum(1 for r in self._records() if r["status"] in TRIALS)

    def _trial(self, rec: dict) -> StudyTrial:
        values = None
        if rec["status"] == "ok":
            values = [value(rec, o.name) for o in self.objectives]
        return StudyTrial(rec["arch_id"], rec["status"], values, rec.get("text"), rec.get("params"),
                          rec.get("flops"), rec, self._arch_of_record(rec))

    def _arch_of_record(self, rec: dict) -> Optional[Arch]:
        """A trial read back as its objective saw it (its first seed's call); None without a network."""
        if not rec.get("text") or not rec.get("widths"):
            return None
        seeds = [s["seed"] for s in rec.get("seeds") or () if isinstance(s, dict) and isinstance(s.get("seed"), int)]
        trial = Trial(rec["arch_id"], rec["text"], rec["widths"], seeds or self.config().resolved_seeds()[:1])
        return self.arch_of(trial, trial.seeds[0], rec)

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
            if self.error is not None:
                raise self.error
            raise RuntimeError(f"the search stopped: {self.summary.stop.message if self.summary else 'no reason'}")
        return item

    def tell(self, outcome: SeedOutcome) -> None:
        if self.done.is_set() and self.error is not None:
            raise self.error
        self.evaluator.told.put(outcome)

    def close(self):
        self._stopping = True
        self.evaluator.closed = True
        self.evaluator.told.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.summary


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


__all__ = ["Arch", "FunctionEvaluator", "Study", "StudyTrial", "create_study", "load_study"]
