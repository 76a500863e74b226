"""What the search asks of a storage, as Optuna's `BaseStorage` says what a study asks of one.

`BaseReader` is what reading a run needs (status, best, export, report, the API's trials);
`BaseStore` adds what the loop writes. The SQLite storage implements both (`sqlite.SearchStore`,
`reader.RunReader`); another storage (one writer serving several processes, a journal file)
subclasses them, and a new operation is an abstract method here with its SQLite implementation,
so the loop, the strategies and the readers never see how a run is kept.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Iterable, List, Optional

from nader.runtime.records import Job, Result

from ..tree import TreeNode


class BaseReader(ABC):
    """A run, read. Damaged cells are left out and described (`problems`), never raised."""

    problems: List[str]  # damaged cells met while reading the tree (`nodes`, `node`)

    @abstractmethod
    def nodes(self) -> List[TreeNode]:
        """Every architecture, in id order, as strategies see it."""

    @abstractmethod
    def node(self, arch_id: int) -> Optional[TreeNode]:
        """One architecture (None when the run has no such id)."""

    @abstractmethod
    def records(self, with_text: bool = True, problems: Optional[list] = None,
                arch_id: Optional[int] = None) -> List[dict]:
        """Every architecture's whole record with its seeds, user attributes (and rungs), in id
        order; with `arch_id`, only that one's."""

    @abstractmethod
    def reports(self) -> List[tuple]:
        """(arch_id, seed, step, value) of what Python objectives reported while running."""

    @abstractmethod
    def counts(self) -> dict:
        """status -> architectures with it."""

    @abstractmethod
    def failed_seeds(self) -> List[tuple]:
        """(arch_id, status, error_kind, error) of the seeds of failed and diverged architectures."""

    @abstractmethod
    def seconds_used(self) -> float:
        """Training seconds over all sessions (a tabular evaluator's simulated time)."""

    @abstractmethod
    def spent(self) -> tuple:
        """(tokens, dollars) the run's LLM calls cost, all sessions."""

    @abstractmethod
    def meta(self, key: str):
        """A run-wide value by key (what the LLM client records of its server, ...), or None."""

    @abstractmethod
    def stored_config(self, problems: Optional[list] = None) -> dict:
        """The run's settings ({} when none or damaged)."""

    @abstractmethod
    def sessions(self) -> List[dict]:
        """Each invocation: session, started, ended, stop_reason."""

    @abstractmethod
    def session_config(self, session: int, problems: Optional[list] = None) -> dict:
        """The settings one session ran with."""

    @abstractmethod
    def job_spec(self, job_id: str) -> Optional[str]:
        """The runtime's spec (JSON) of a training job, or None."""

    @abstractmethod
    def proxy_stats(self) -> List[dict]:
        """Per proxy and setting: architectures scored, computed (and their seconds), copied."""

    @abstractmethod
    def close(self) -> None: ...


class BaseStore(BaseReader):
    """A run, written by one process holding the run's lock (`nader.runtime.lock.RunLock`). Each
    method is one transaction: a killed process leaves the run as it was after the last one."""

    run_dir: Path

    # ------------------------------------------------------------------ settings and sessions
    @abstractmethod
    def config(self) -> Optional[dict]:
        """The settings to resume with; StoreDamaged when they cannot be read."""

    @abstractmethod
    def set_config(self, config: dict) -> None: ...

    @abstractmethod
    def begin_session(self, config: dict, command: str, pid: int, trials: int) -> int: ...

    @abstractmethod
    def end_session(self, session: int, reason: str, trials: int) -> None: ...

    @abstractmethod
    def proxy_cache(self):
        """The run's training-free proxy scores by canonical hash (`proxies.ProxyCache`: get, put)."""

    # ------------------------------------------------------------------ the tree
    @abstractmethod
    def insert(self, records: Iterable[dict]) -> None:
        """New architectures (their columns), all or none."""

    @abstractmethod
    def set_status(self, arch_id: int, status: str, **columns) -> None: ...

    @abstractmethod
    def retry(self, arch_id: int, seeds: Iterable[int]) -> None:
        """A failed architecture's seeds pending again, one attempt more."""

    @abstractmethod
    def add_usage(self, arch_id: int, tokens_in: int = 0, tokens_out: int = 0, cost_usd: float = 0.0) -> None: ...

    # ------------------------------------------------------------------ evaluations
    @abstractmethod
    def seeds_done(self, arch_id: int) -> dict:
        """seed -> (status, error_kind) of the evaluations recorded."""

    @abstractmethod
    def record_seed(self, arch_id: int, seed: int, *, status: str, valid_acc=None, test_acc=None, seconds=None,
                    epochs=None, error=None, error_kind=None, job_id=None, result: Optional[Result] = None,
                    seeds_total: int = 1, objectives: Optional[dict] = None,
                    user_attrs: Optional[dict] = None) -> Optional[TreeNode]:
        """One seed's outcome (ok, pruned, diverged, failed) with the runtime's result and the
        objective's user attributes; the node when it was the last seed."""

    @abstractmethod
    def add_reports(self, rows: Iterable[tuple]) -> None:
        """(arch_id, seed, step, value) reports of Python objectives (the driver writes them)."""

    @abstractmethod
    def refresh(self, arch_id: int, seeds_total: int) -> Optional[TreeNode]: ...

    # the runtime's jobs, which `TrainingEvaluator` adds and reads back on resume
    @abstractmethod
    def add_jobs(self, jobs: Iterable[Job]) -> None: ...

    @abstractmethod
    def finished(self, job_id: str) -> Optional[Result]: ...

    # ------------------------------------------------------------------ rungs (nader.search.fidelity)
    @abstractmethod
    def brackets(self) -> List[dict]: ...

    @abstractmethod
    def add_bracket(self, bracket: int, first_rung: int, size: int) -> None: ...

    @abstractmethod
    def resize_bracket(self, bracket: int, size: int) -> None: ...

    @abstractmethod
    def current_rung(self, arch_id: int) -> Optional[dict]: ...

    @abstractmethod
    def enter_rung(self, arch_ids: Iterable[int], rung: int, bracket: int, epochs: int) -> None: ...

    @abstractmethod
    def bracket_rungs(self, bracket: int, rung: int) -> List[dict]: ...

    @abstractmethod
    def left_rungs(self, arch_id: int) -> List[dict]: ...

    @abstractmethod
    def promote(self, arch_ids: Iterable[int], rung: int, next_rung: int, bracket: int, epochs: int) -> None: ...
