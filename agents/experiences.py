"""The experience base: the Reflector's records of the Modifier's outcomes, each keyed by the
embedding of its plan, in table `experiences` of the run's `RUN/runs.sqlite` (created on first use;
`scope` separates bases that share a database). The agents' storage of them: the Reflector
(`reflector.py`) writes and reads through it and writes no SQL.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import numpy as np

KINDS = ("failure", "repair", "success", "training-failure")
TOP_K = 5

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiences (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    arch_id TEXT,
    parent_id TEXT,
    kind TEXT NOT NULL,
    plan TEXT NOT NULL,
    detail TEXT NOT NULL,
    block TEXT,
    accuracy_change REAL,
    lesson TEXT,
    embedder TEXT NOT NULL,
    vector BLOB NOT NULL,
    created REAL NOT NULL
);
"""


@dataclass
class Experience:
    id: int
    kind: str
    plan: str
    detail: str
    lesson: Optional[str]
    arch_id: Optional[str] = None
    accuracy_change: Optional[float] = None


class ExperienceBase:
    """Experiences of one search, in the run's database. `scope` separates experience bases that
    share a database (the NAD benchmark keeps one per setting; a search uses "search")."""

    def __init__(self, path, embedder, scope: str = "search"):
        self.scope = scope
        path = Path(path)
        if path.is_dir() or not path.suffix:
            path.mkdir(parents=True, exist_ok=True)
            path = path / "runs.sqlite"
        self.path = path
        self.embedder = embedder
        self._conn = sqlite3.connect(path, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        with self._conn:
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def _vector(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([text]), dtype=np.float32)[0]

    def add(self, kind: str, plan: str, detail: str, *, lesson: Optional[str] = None, block: Optional[str] = None,
            arch_id=None, parent_id=None, accuracy_change: Optional[float] = None) -> int:
        if kind not in KINDS:
            raise ValueError(f"unknown experience kind {kind!r} (one of {', '.join(KINDS)})")
        vector = self._vector(plan)
        with self._conn:
            cur = self._conn.execute(
                "INSERT INTO experiences (scope, arch_id, parent_id, kind, plan, detail, block, accuracy_change, lesson, "
                "embedder, vector, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (self.scope, None if arch_id is None else str(arch_id), None if parent_id is None else str(parent_id), kind, plan,
                 detail, block, accuracy_change, lesson, self.embedder.name, vector.tobytes(), time.time()))
        return int(cur.lastrowid)

    def has_training(self, arch_id) -> bool:
        """Whether the architecture's training outcome is already recorded."""
        row = self._conn.execute("SELECT 1 FROM experiences WHERE scope = ? AND arch_id = ? AND kind IN "
                                 "('success', 'training-failure')", (self.scope, str(arch_id))).fetchone()
        return row is not None

    def all(self) -> List[Experience]:
        rows = self._conn.execute(
            "SELECT id, kind, plan, detail, lesson, arch_id, accuracy_change FROM experiences WHERE scope = ? ORDER BY id",
            (self.scope,)).fetchall()
        return [Experience(*row) for row in rows]

    def __len__(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM experiences WHERE scope = ?", (self.scope,)).fetchone()[0]

    def retrieve(self, plan: str, k: int = TOP_K) -> List[Experience]:
        """The k experiences with a lesson whose plans are most similar to `plan`, best first."""
        rows = self._conn.execute(
            "SELECT id, kind, plan, detail, lesson, arch_id, accuracy_change, vector FROM experiences "
            "WHERE scope = ? AND lesson IS NOT NULL AND embedder = ? ORDER BY id", (self.scope, self.embedder.name)).fetchall()
        if not rows or k < 1:
            return []
        matrix = np.stack([np.frombuffer(r[7], dtype=np.float32) for r in rows])
        sims = matrix @ self._vector(plan)
        order = sorted(range(len(rows)), key=lambda i: (-float(sims[i]), -rows[i][0]))[:k]
        return [Experience(*rows[i][:7]) for i in order]
