"""Training-free proxy scores by canonical hash (`ProxyCache`): the ``proxy_scores`` table of a
run's database (`SearchStore.proxy_cache()`) or of a file several runs share (`--proxy-cache`,
`ProxyCache.open`). The reads of a run's scores for status and the report are
`reads.TreeReads.proxy_stats`.
"""
from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable

from nader.runtime.integrity import check_database, store_error
from nader.runtime.store import RunStore


class ProxyCache:
    """Zero-cost proxy scores by (architecture hash, proxy, setting), so no score is computed twice:
    the ``proxy_scores`` table of a run's database (``SearchStore.proxy_cache()``) or of a file
    several runs share (``ProxyCache.open(PATH)``, `--proxy-cache`). The table, its writes and the
    shared file's connection live here; a run's summary of it is `TreeReads.proxy_stats`.

    ``setting`` names everything the score depends on besides the architecture (the proxy's
    version, the network's fixed small width and depth, the batch, the dataset;
    `nader.search.proxies.scorer`). ``source`` says where a run got a row: ``computed`` (evaluated
    for this database) or ``copied`` (read from a shared file), so a run reports what it
    evaluated apart from what it read.
    """

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS proxy_scores (
        hash TEXT NOT NULL, proxy TEXT NOT NULL, setting TEXT NOT NULL,
        score REAL,                             -- NULL: no score (the error says why)
        error TEXT,
        seconds REAL NOT NULL,                  -- evaluating it (network build included), CPU wall time
        source TEXT NOT NULL,                   -- computed | copied
        created REAL NOT NULL,
        PRIMARY KEY (hash, proxy, setting)
    )"""
    CHUNK = 500  # hashes per query (SQLite's variable limit is 32,766; smaller keeps each query short)

    def __init__(self, owner):
        """`owner` holds the connection: a SearchStore, or the shared file's (`open`)."""
        self.owner = owner
        with owner._lock:
            owner.conn.execute(self.SCHEMA)

    @classmethod
    def open(cls, path) -> "ProxyCache":
        """A cache file shared by runs (created when missing); StoreError when it cannot be used."""
        return cls(_SharedFile(Path(path)))

    @property
    def path(self) -> Path:
        return self.owner.path

    def get(self, hashes: Iterable[str], proxy: str, setting: str) -> dict:
        """hash -> (score, error) for the hashes this cache holds."""
        hashes = list(dict.fromkeys(hashes))
        out: dict = {}
        try:
            with self.owner._lock:
                for i in range(0, len(hashes), self.CHUNK):
                    part = hashes[i:i + self.CHUNK]
                    rows = self.owner.conn.execute(
                        f"SELECT hash, score, error FROM proxy_scores WHERE proxy=? AND setting=? AND hash IN "
                        f"({','.join('?' * len(part))})", (proxy, setting, *part)).fetchall()
                    out.update({h: (s if isinstance(s, (int, float)) else None, e) for h, s, e in rows})
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, writing=False) from None
        return out

    def put(self, rows: Iterable[tuple], source: str = "computed") -> None:
        """Rows of (hash, proxy, setting, score, error, seconds), one transaction; a row already held is kept."""
        now = time.time()
        with RunStore._Tx(self.owner) as c:
            c.executemany("INSERT OR IGNORE INTO proxy_scores(hash, proxy, setting, score, error, seconds, source, "
                          "created) VALUES (?,?,?,?,?,?,?,?)", [(*r, source, now) for r in rows])

    def close(self) -> None:
        if isinstance(self.owner, _SharedFile):
            self.owner.close()


class _SharedFile:
    """The connection of a proxy cache file shared by several runs (and processes: WAL, a busy timeout)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.RLock()
        self.conn = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                check_database(path)
            self.conn = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA busy_timeout=60000")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        except (sqlite3.Error, OSError) as exc:
            if self.conn is not None:
                self.conn.close()
            raise store_error(path, exc, writing=True) from None

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()


__all__ = ["ProxyCache"]
