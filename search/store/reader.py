"""Reading a run without its lock: `status`, `best`, `export`, `report` and the API open the
database read-only (a search may be running), after the integrity check.

The check is SQLite's full one (``PRAGMA integrity_check``, about twice ``quick_check``'s time,
a fraction of reading the tree): besides a damaged file (StoreError, one line naming the fix) it
finds an index that disagrees with its table, which `run` refuses and `--repair` recovers; a
reader goes on and says so (`RunReader.warnings`).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import List

from nader.runtime.integrity import RECOVERED_NAME, IndexMismatch, check_database, connect_readonly
from nader.runtime.store import DB_NAME

from .base import BaseReader
from .reads import TreeReads


class RunNotFound(FileNotFoundError):
    """The directory holds no search: no database, or no tree in it."""


def index_warning(exc: IndexMismatch, fix: str) -> str:
    """The line a reader prints for an index that disagrees with its table, naming the fix."""
    names = ", ".join(exc.indexes[:3]) + (" ..." if len(exc.indexes) > 3 else "")
    return (f"{exc.path}: index {names} disagrees with its table (integrity_check); reading goes on, but "
            f"`nader-search run` refuses this store: run {fix} to copy what can be read into {RECOVERED_NAME}, "
            f"indexes rebuilt")


class RunReader(TreeReads, BaseReader):
    """A run's database, read-only. An index mismatch is a warning in `warnings` naming `fix`, or,
    with `repairing`, raised (IndexMismatch, a StoreDamaged: --repair recovers it).
    `full_check=False` keeps the quick check (the API's repeated reads; `load_study` checks in
    full once)."""

    def __init__(self, run_dir, *, full_check: bool = True, repairing: bool = False,
                 fix: str = "the same command with --repair"):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / DB_NAME
        if not self.path.is_file():
            raise RunNotFound(f"{run_dir} is not a search run directory (no {DB_NAME})")
        self.warnings: List[str] = []
        try:
            check_database(self.path, full=full_check)
        except IndexMismatch as exc:
            if repairing:
                raise
            self.warnings.append(index_warning(exc, fix))
        self.problems: List[str] = []
        self._lock = threading.RLock()
        self.conn = connect_readonly(self.path)
        if not self._has_table("archs"):
            self.conn.close()
            raise RunNotFound(f"{run_dir} holds no search (no architectures table; was it made by "
                              f"`nader-search eval`?); `nader-search run` creates one")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "RunReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
