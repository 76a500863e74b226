"""The run store: a run directory with an SQLite database and per-job checkpoints.

Layout::

    RUN/runs.sqlite          jobs, results, epochs (WAL journal; one transaction per epoch/result)
    RUN/checkpoints/ID.pt    model + optimizer state after the last finished epoch (atomic writes)

A job whose result has status ``ok`` or ``diverged`` is finished and never rerun; a job without
a result (interrupted) or with a ``failed`` result is run again, resuming from its checkpoint.
Workers on the same machine (in-process, process pool, local Ray) open the database themselves
and commit each epoch; the driver commits each result as it arrives.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable, List, Optional

from .faults import machine_sqlite_error
from .integrity import StoreError, check_database, json_cell, store_error, text_factory
from .records import Job, Result

DB_NAME = "runs.sqlite"
FINAL_STATUSES = ("ok", "diverged")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',   -- pending | running | ok | diverged | failed
    epochs_done INTEGER NOT NULL DEFAULT 0,
    created REAL, updated REAL
);
CREATE TABLE IF NOT EXISTS results (
    job_id TEXT PRIMARY KEY,
    status TEXT NOT NULL, seed INTEGER, test_acc REAL, valid_acc REAL, train_loss REAL, train_acc REAL,
    params INTEGER, flops INTEGER, epochs INTEGER, seconds REAL, error TEXT, error_kind TEXT,
    record TEXT NOT NULL, finished REAL
);
CREATE TABLE IF NOT EXISTS epochs (
    job_id TEXT NOT NULL, epoch INTEGER NOT NULL,
    train_loss REAL, train_acc REAL, valid_acc REAL, test_acc REAL, lr REAL, seconds REAL,
    record TEXT NOT NULL, recorded REAL,
    PRIMARY KEY (job_id, epoch)
);
"""
SCHEMA_VERSION = "1"


class RunStore:
    """One connection to a run directory's database (open one per process/thread)."""

    def __init__(self, run_dir, *, create: bool = True, check: bool = True):
        """`check`: verify the database first (integrity.check_database, in full: the store is
        opened to be written); the commands do, the workers that open the store once per job do
        not (their command already has)."""
        self.run_dir = Path(run_dir)
        if create:
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the run directory {self.run_dir}: {exc.strerror or exc}") from None
        elif not self.run_dir.is_dir():
            raise FileNotFoundError(f"run directory {self.run_dir} does not exist")
        self.path = self.run_dir / DB_NAME
        self._lock = threading.RLock()
        self.problems: List[str] = []  # damaged cells met while reading (the commands print them)
        if check:
            check_database(self.path, full=True)
        self.conn = None
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
            self.conn.text_factory = text_factory  # an undecodable cell is a warning, not a failed query
            self.conn.execute("PRAGMA busy_timeout=60000")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            self._create_schema()
        except sqlite3.Error as exc:
            if self.conn is not None:
                self.conn.close()
            raise store_error(self.path, exc, writing=True) from None

    def _create_schema(self) -> None:
        for stmt in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
            self.conn.execute(stmt)
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))

    # ------------------------------------------------------------------ plumbing
    class _Tx:
        def __init__(self, store):
            self.store = store

        def __enter__(self):
            self.store._lock.acquire()
            try:
                self.store.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                self.store._lock.release()
                raise store_error(self.store.path, exc, writing=True) if machine_sqlite_error(exc) else exc
            return self.store.conn

        def __exit__(self, et, ev, tb):
            try:
                self.store.conn.execute("COMMIT" if et is None else "ROLLBACK")
            except sqlite3.Error as exc:  # a full disk shows up here first; SQLite may have rolled back itself
                if et is None:
                    raise store_error(self.store.path, exc, writing=True) from None
            finally:
                self.store._lock.release()
            if isinstance(ev, sqlite3.Error) and machine_sqlite_error(ev):
                raise store_error(self.store.path, ev, writing=True) from None
            return False

    def _tx(self) -> "RunStore._Tx":
        return RunStore._Tx(self)

    def close(self) -> None:
        with self._lock:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def checkpoint_path(self, job_id: str) -> Path:
        return self.run_dir / "checkpoints" / f"{job_id}.pt"

    # ------------------------------------------------------------------ writes
    def add_jobs(self, jobs: Iterable[Job]) -> None:
        now = time.time()
        with self._tx() as c:
            for j in jobs:
                spec = j.to_dict()
                spec.pop("run_dir", None)
                c.execute("INSERT OR IGNORE INTO jobs(job_id, spec, state, created, updated) VALUES (?,?,?,?,?)",
                          (j.job_id, json.dumps(spec, sort_keys=True), "pending", now, now))

    def record_epoch(self, job_id: str, metrics: dict) -> None:
        """Commit one finished epoch (one transaction)."""
        rec = {k: v for k, v in metrics.items() if k not in ("type", "job_id", "epochs")}
        now = time.time()
        with self._tx() as c:
            self._put_epoch(c, job_id, rec, now)
            c.execute("UPDATE jobs SET state='running', epochs_done=MAX(epochs_done, ?), updated=? WHERE job_id=?",
                      (int(rec["epoch"]), now, job_id))

    @staticmethod
    def _put_epoch(c, job_id: str, rec: dict, now: float) -> None:
        c.execute("INSERT OR REPLACE INTO epochs(job_id, epoch, train_loss, train_acc, valid_acc, test_acc, lr, "
                  "seconds, record, recorded) VALUES (?,?,?,?,?,?,?,?,?,?)",
                  (job_id, int(rec["epoch"]), rec.get("train_loss"), rec.get("train_acc"), rec.get("valid_acc"),
                   rec.get("test_acc"), rec.get("lr"), rec.get("seconds"), json.dumps(rec, sort_keys=True), now))

    def put_result(self, r: Result) -> None:
        """Commit a job's result and its per-epoch history together (one transaction)."""
        with self._tx() as c:
            self._put_result(c, r, time.time())

    @classmethod
    def _put_result(cls, c, r: Result, now: float) -> None:
        """The writes of put_result, inside a caller's transaction (the search commits a result
        and its architecture's record together)."""
        c.execute("INSERT OR REPLACE INTO results(job_id, status, seed, test_acc, valid_acc, train_loss, train_acc, "
                  "params, flops, epochs, seconds, error, error_kind, record, finished) "
                  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  (r.job_id, r.status, r.seed, r.test_acc, r.valid_acc, r.train_loss, r.train_acc, r.params,
                   r.flops, r.epochs, r.seconds, r.error, r.error_kind, r.to_json(), now))
        for h in r.history:
            cls._put_epoch(c, r.job_id, h, now)
        c.execute("UPDATE jobs SET state=?, epochs_done=MAX(epochs_done, ?), updated=? WHERE job_id=?",
                  (r.status, int(r.epochs or 0), now, r.job_id))

    # ------------------------------------------------------------------ reads
    def _record(self, table: str, row: str, value, cls, column: str = "record"):
        """A JSON cell read as `cls`; a damaged one is described in `problems` and left out (None)."""
        data = json_cell(value, table, row, column, self.problems, expect=(dict,))
        if data is None:
            return None
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as exc:
            self.problems.append(f"{DB_NAME}: table {table}, row {row}, column {column}: not a {cls.__name__} "
                                 f"({exc}); left out")
            return None

    def result(self, job_id: str) -> Optional[Result]:
        """The job's result; None also when its record is damaged (the job then runs again)."""
        with self._lock:
            row = self.conn.execute("SELECT record FROM results WHERE job_id=?", (job_id,)).fetchone()
        return self._record("results", f"job_id={job_id}", row[0], Result) if row else None

    def finished(self, job_id: str) -> Optional[Result]:
        """The job's result if it is final (ok or diverged); None if it must (re)run."""
        r = self.result(job_id)
        return r if r is not None and r.status in FINAL_STATUSES else None

    def results(self) -> List[Result]:
        with self._lock:
            rows = self.conn.execute("SELECT job_id, record FROM results ORDER BY finished").fetchall()
        out = (self._record("results", f"job_id={j}", r, Result) for j, r in rows)
        return [r for r in out if r is not None]

    def epochs(self, job_id: str) -> List[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT epoch, record FROM epochs WHERE job_id=? ORDER BY epoch",
                                     (job_id,)).fetchall()
        out = (json_cell(r, "epochs", f"job_id={job_id} epoch={e}", "record", self.problems, (dict,)) for e, r in rows)
        return [d for d in out if d is not None]

    def epochs_since(self, recorded_after: float) -> List[tuple]:
        """(job_id, record, recorded) of epochs committed after a time (progress polling)."""
        with self._lock:
            rows = self.conn.execute("SELECT job_id, epoch, record, recorded FROM epochs WHERE recorded > ? "
                                     "ORDER BY recorded", (recorded_after,)).fetchall()
        out = ((j, json_cell(r, "epochs", f"job_id={j} epoch={e}", "record", self.problems, (dict,)), t)
               for j, e, r, t in rows)
        return [x for x in out if x[1] is not None]

    def jobs(self) -> List[tuple]:
        """(Job, state, epochs_done) for every job of the run (damaged specs left out, with a warning)."""
        with self._lock:
            rows = self.conn.execute("SELECT job_id, spec, state, epochs_done FROM jobs ORDER BY created").fetchall()
        out = ((self._record("jobs", f"job_id={j}", s, Job, "spec"), st, e) for j, s, st, e in rows)
        return [x for x in out if x[0] is not None]
