"""The search's storage in SQLite: the modification tree in the run directory's database, beside
the runtime's tables (`SearchStore`, the writer; its reads are `reads.TreeReads`).

``RUN/runs.sqlite`` holds the runtime's tables (meta, jobs, results, epochs; see
``nader.runtime.store``) and these:

``archs``          one row per architecture the search produced, valid or not (the tree)
``arch_seeds``     one row per (architecture, seed) evaluation that finished
``search_sessions`` one row per ``nader-search run`` invocation on the run directory
``fidelity_brackets``, ``arch_rungs``  multi-fidelity searches: the brackets, and each rung an
                   architecture entered (results of the rungs it left; see `nader.search.fidelity`)
``arch_reports``   what a Python objective reported while it ran (`arch.report(value, step)`), which
                   the pruners read (`nader.search.pruners`)

Every change is one short transaction (WAL journal, synchronous=NORMAL), so a killed process
leaves the tree as it was after the last committed change: a row is either inserted with its check outcome or not at
all, and a seed's result, the runtime's record of that job and the architecture's aggregate are
committed together.
"""
from __future__ import annotations

import json
import time
from typing import Iterable, List, Optional

from nader.runtime.integrity import StoreDamaged, json_cell
from nader.runtime.jobs import Result
from nader.runtime.store import RunStore

from ..tree import TreeNode
from .base import BaseStore
from .proxies import ProxyCache
from .reads import CONFIG_KEY, TreeReads

SEARCH_SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS archs (
    arch_id INTEGER PRIMARY KEY,            -- 0 is the root; then in proposal order
    parent_id INTEGER,                      -- NULL for the root
    depth INTEGER NOT NULL,                 -- edges from the root
    status TEXT NOT NULL,                   -- see nader.search.tree.STATUSES
    text TEXT,                              -- the whole architecture (.nad); NULL if nothing was produced
    hash TEXT,                              -- canonical hash of the architecture (valid ones)
    duplicate_of INTEGER,                   -- status 'duplicate': the equal architecture
    origin TEXT NOT NULL,                   -- root | mutation | llm | ...
    operator TEXT,                          -- mutation operator, or a short label of the change
    change TEXT,                            -- JSON: the change (operator arguments, LLM suggestion, ...)
    diagnostics TEXT,                       -- JSON: why it is invalid / over budget / failed
    widths TEXT, params INTEGER, flops INTEGER, binding TEXT,  -- fitted to the budget
    prescreen TEXT,                         -- JSON: {"proxy", "score", "round", "rank"}
    seeds_done INTEGER NOT NULL DEFAULT 0,
    valid_acc REAL, test_acc REAL,          -- mean over ok seeds (percent)
    valid_std REAL, test_std REAL,
    seconds REAL,                           -- training wall time, summed over seeds
    attempts INTEGER NOT NULL DEFAULT 1,    -- evaluations started (retries after a crash add one)
    tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,       -- what producing it cost (LLM strategies)
    session INTEGER,                        -- the search_sessions row that proposed it
    created REAL NOT NULL, started REAL, finished REAL, updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS archs_hash ON archs(hash);
CREATE INDEX IF NOT EXISTS archs_parent ON archs(parent_id);
CREATE TABLE IF NOT EXISTS arch_seeds (
    arch_id INTEGER NOT NULL, seed INTEGER NOT NULL,
    job_id TEXT,                            -- the runtime job (results/epochs tables); NULL for tabular evaluators
    status TEXT NOT NULL,                   -- ok | diverged | failed
    valid_acc REAL, test_acc REAL, seconds REAL, epochs INTEGER,
    error TEXT, error_kind TEXT,
    finished REAL NOT NULL,
    PRIMARY KEY (arch_id, seed)
);
CREATE TABLE IF NOT EXISTS search_sessions (
    session INTEGER PRIMARY KEY,
    started REAL NOT NULL, ended REAL,
    pid INTEGER, command TEXT,
    config TEXT,                            -- JSON: the configuration this session ran with
    stop_reason TEXT,                       -- NULL while running (or if the process was killed)
    trials_before INTEGER, trials_after INTEGER
);
CREATE TABLE IF NOT EXISTS fidelity_brackets (
    bracket INTEGER PRIMARY KEY,
    first_rung INTEGER NOT NULL,
    size INTEGER NOT NULL                   -- architectures entering; lowered when the search stops early
);
CREATE TABLE IF NOT EXISTS arch_rungs (
    arch_id INTEGER NOT NULL, rung INTEGER NOT NULL, bracket INTEGER NOT NULL, epochs INTEGER NOT NULL,
    promoted INTEGER NOT NULL DEFAULT 0,    -- 1: left for the next rung, with this rung's results below
    status TEXT, valid_acc REAL, test_acc REAL, seconds REAL,
    seeds TEXT,                             -- JSON: the rung's arch_seeds rows
    finished REAL,
    PRIMARY KEY (arch_id, rung)
);
CREATE INDEX IF NOT EXISTS arch_rungs_bracket ON arch_rungs(bracket, rung);
CREATE TABLE IF NOT EXISTS arch_reports (
    arch_id INTEGER NOT NULL, seed INTEGER NOT NULL, step INTEGER NOT NULL,
    value REAL,                             -- NULL: the objective reported NaN
    recorded REAL NOT NULL,
    PRIMARY KEY (arch_id, seed, step)
);
"""

# Columns added after the first release: (table, column, type). A store opened for writing gains
# the ones it lacks (NULL in old rows); readers treat a missing column as NULL.
ADDED_COLUMNS = (
    ("archs", "objectives", "TEXT"),       # JSON: the mean over ok seeds of each reported objective (objectives.py)
    ("arch_seeds", "objectives", "TEXT"),  # JSON: what the evaluator reported beyond the accuracies
    ("archs", "user_attrs", "TEXT"),       # JSON: a Python objective's `arch.set_user_attr` (objective.py bounds it)
)
#: seeds whose values are the architecture's: trained to the end, or pruned at a lower step (its last value)
_SCORED = ("ok", "pruned")


def _mean_std(values: List[float]):
    if not values:
        return None, None
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, None
    return m, (sum((v - m) ** 2 for v in values) / (len(values) - 1)) ** 0.5


def _mean_objectives(cells: List[Optional[str]]) -> Optional[str]:
    """The mean of each objective the ok seeds reported (JSON), or None when none did."""
    values: dict = {}
    for cell in cells:
        try:
            reported = json.loads(cell) if cell else {}
        except ValueError:
            continue
        for name, v in (reported.items() if isinstance(reported, dict) else ()):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                values.setdefault(name, []).append(float(v))
    means = {name: _mean_std(vs)[0] for name, vs in values.items()}
    return json.dumps(means, sort_keys=True) if means else None


class SearchStore(TreeReads, RunStore, BaseStore):
    """The run store with the search's tables, in SQLite. Open it only while holding the run's lock."""

    def _create_schema(self) -> None:
        super()._create_schema()
        # WAL with synchronous=NORMAL: a commit survives the process being killed (it is in the
        # WAL), only an OS crash or power cut can lose the last few, which a resume redoes. FULL
        # would fsync every commit: about 9 ms each here, the loop's whole per-trial budget.
        self.conn.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            self.conn.executescript(_SCHEMA)
            for table, column, kind in ADDED_COLUMNS:
                have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('search.schema', ?)", (SEARCH_SCHEMA_VERSION,))

    # ------------------------------------------------------------------ configuration and sessions
    def config(self) -> Optional[dict]:
        with self._lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key=?", (CONFIG_KEY,)).fetchone()
        if not row:
            return None
        problems: list = []
        config = json_cell(row[0], "meta", f"key={CONFIG_KEY}", "value", problems, expect=(dict,))
        if config is None:  # without its settings the run cannot be resumed as it was
            raise StoreDamaged(f"{self.path}: {problems[0] if problems else 'the search settings are empty'}; "
                               f"the run's settings are unreadable", self.path)
        return config

    def set_config(self, config: dict) -> None:
        with self._tx() as c:
            c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (CONFIG_KEY, json.dumps(config, sort_keys=True)))

    def begin_session(self, config: dict, command: str, pid: int, trials: int) -> int:
        with self._tx() as c:
            cur = c.execute("INSERT INTO search_sessions(started, pid, command, config, trials_before) VALUES (?,?,?,?,?)",
                            (time.time(), pid, command, json.dumps(config, sort_keys=True), trials))
            return int(cur.lastrowid)

    def end_session(self, session: int, reason: str, trials: int) -> None:
        with self._tx() as c:
            c.execute("UPDATE search_sessions SET ended=?, stop_reason=?, trials_after=? WHERE session=?",
                      (time.time(), reason, trials, session))

    def proxy_cache(self) -> ProxyCache:
        """This run's zero-cost proxy scores (`proxies.ProxyCache`), its table created on first use."""
        return ProxyCache(self)

    # ------------------------------------------------------------------ the tree
    def insert(self, records: Iterable[dict]) -> None:
        """Insert new architectures (dicts of archs columns), all in one transaction."""
        now = time.time()
        with self._tx() as c:
            for rec in records:
                row = dict(rec)
                for key in ("change", "diagnostics", "widths", "prescreen"):
                    if key in row and row[key] is not None and not isinstance(row[key], str):
                        row[key] = json.dumps(row[key], sort_keys=True)
                row.setdefault("created", now)
                row.setdefault("updated", now)
                if row.get("status") == "training":
                    row.setdefault("started", now)
                cols = ", ".join(row)
                c.execute(f"INSERT INTO archs({cols}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))

    def set_status(self, arch_id: int, status: str, **columns) -> None:
        now = time.time()
        sets = {"status": status, "updated": now, **columns}
        if status == "training":
            sets.setdefault("started", now)
        with self._tx() as c:
            c.execute(f"UPDATE archs SET {', '.join(f'{k}=?' for k in sets)} WHERE arch_id=?",
                      (*sets.values(), arch_id))

    def retry(self, arch_id: int, seeds: Iterable[int]) -> None:
        """Make a failed architecture's seeds pending again (one more attempt)."""
        now = time.time()
        with self._tx() as c:
            for seed in seeds:
                c.execute("DELETE FROM arch_seeds WHERE arch_id=? AND seed=?", (arch_id, seed))
            done = c.execute("SELECT COUNT(*) FROM arch_seeds WHERE arch_id=?", (arch_id,)).fetchone()[0]
            c.execute("UPDATE archs SET status='training', attempts=attempts+1, seeds_done=?, finished=NULL, "
                      "started=?, updated=? WHERE arch_id=?", (done, now, now, arch_id))

    def add_usage(self, arch_id: int, tokens_in: int = 0, tokens_out: int = 0, cost_usd: float = 0.0) -> None:
        """Add what producing or judging an architecture cost (the LLM layer calls this)."""
        with self._tx() as c:
            c.execute("UPDATE archs SET tokens_in=tokens_in+?, tokens_out=tokens_out+?, cost_usd=cost_usd+?, updated=? "
                      "WHERE arch_id=?", (int(tokens_in), int(tokens_out), float(cost_usd), time.time(), arch_id))

    # ------------------------------------------------------------------ evaluations
    def seeds_done(self, arch_id: int) -> dict:
        """seed -> status of the evaluations recorded for an architecture."""
        with self._lock:
            rows = self.conn.execute("SELECT seed, status, error_kind FROM arch_seeds WHERE arch_id=?",
                                     (arch_id,)).fetchall()
        return {s: (st, kind) for s, st, kind in rows}

    def record_seed(self, arch_id: int, seed: int, *, status: str, valid_acc=None, test_acc=None, seconds=None,
                    epochs=None, error=None, error_kind=None, job_id=None, result: Optional[Result] = None,
                    seeds_total: int = 1, objectives: Optional[dict] = None,
                    user_attrs: Optional[dict] = None) -> Optional[TreeNode]:
        """Commit one seed's outcome (with the runtime's result record, if any, and the user
        attributes its objective set, merged into the architecture's) and, when it is the
        architecture's last seed, its aggregate and final status; returns the node when final."""
        now = time.time()
        with self._tx() as c:
            if result is not None:
                self._put_result(c, result, now)
            if user_attrs:
                self._merge_user_attrs(c, arch_id, user_attrs)
            c.execute("INSERT OR REPLACE INTO arch_seeds(arch_id, seed, job_id, status, valid_acc, test_acc, seconds, "
                      "epochs, error, error_kind, finished, objectives) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                      (arch_id, seed, job_id, status, valid_acc, test_acc, seconds, epochs, error, error_kind, now,
                       json.dumps(objectives, sort_keys=True) if objectives else None))
            final = self._aggregate(c, arch_id, seeds_total, now)
        return self.node(arch_id) if final else None

    def refresh(self, arch_id: int, seeds_total: int) -> Optional[TreeNode]:
        """Recompute an architecture's aggregate from its seeds; the node when every seed is done."""
        with self._tx() as c:
            final = self._aggregate(c, arch_id, seeds_total, time.time())
        return self.node(arch_id) if final else None

    @staticmethod
    def _merge_user_attrs(c, arch_id: int, attrs: dict) -> None:
        row = c.execute("SELECT user_attrs FROM archs WHERE arch_id=?", (arch_id,)).fetchone()
        try:
            merged = json.loads(row[0]) if row and row[0] else {}
        except (TypeError, ValueError):  # a damaged cell is replaced, not merged into
            merged = {}
        merged = {**(merged if isinstance(merged, dict) else {}), **attrs}
        c.execute("UPDATE archs SET user_attrs=? WHERE arch_id=?", (json.dumps(merged, sort_keys=True), arch_id))

    def add_reports(self, rows: Iterable[tuple]) -> None:
        """(arch_id, seed, step, value) reports of Python objectives; a step reported again is kept once."""
        now = time.time()
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO arch_reports(arch_id, seed, step, value, recorded) VALUES (?,?,?,?,?)",
                          [(a, s, st, v, now) for a, s, st, v in rows])

    @staticmethod
    def _aggregate(c, arch_id: int, seeds_total: int, now: float) -> bool:
        rows = c.execute("SELECT status, valid_acc, test_acc, seconds, error, error_kind, seed, objectives FROM "
                         "arch_seeds WHERE arch_id=? ORDER BY seed", (arch_id,)).fetchall()
        final = len(rows) >= seeds_total
        ok = [r for r in rows if r[0] == "ok"] or [r for r in rows if r[0] == "pruned"]  # the values it has
        valid, valid_std = _mean_std([r[1] for r in ok if r[1] is not None])
        test, test_std = _mean_std([r[2] for r in ok if r[2] is not None])
        earlier = c.execute("SELECT COALESCE(SUM(seconds), 0) FROM arch_rungs WHERE arch_id=? AND promoted=1",
                            (arch_id,)).fetchone()[0]  # the rungs it was promoted from
        sets = {"seeds_done": len(rows), "seconds": earlier + sum(r[3] or 0.0 for r in rows), "updated": now}
        if final:
            statuses = {r[0] for r in rows}
            arch_status = next(s for s in ("ok", "pruned", "diverged", "failed") if s in statuses or s == "failed")
            bad = [{"seed": r[6], "status": r[0], "error": r[4], "error_kind": r[5]} for r in rows
                   if r[0] not in _SCORED]
            sets.update(status=arch_status, valid_acc=valid, test_acc=test, valid_std=valid_std, test_std=test_std,
                        finished=now, diagnostics=json.dumps(bad) if bad else None,
                        objectives=_mean_objectives([r[7] for r in ok]))
        c.execute(f"UPDATE archs SET {', '.join(f'{k}=?' for k in sets)} WHERE arch_id=?", (*sets.values(), arch_id))
        return final

    # ------------------------------------------------------------------ rungs (nader.search.fidelity)
    def brackets(self) -> List[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT bracket, first_rung, size FROM fidelity_brackets ORDER BY bracket").fetchall()
        return [{"bracket": b, "first_rung": f, "size": n} for b, f, n in rows]

    def add_bracket(self, bracket: int, first_rung: int, size: int) -> None:
        with self._tx() as c:
            c.execute("INSERT INTO fidelity_brackets(bracket, first_rung, size) VALUES (?,?,?)", (bracket, first_rung, size))

    def resize_bracket(self, bracket: int, size: int) -> None:
        with self._tx() as c:
            c.execute("UPDATE fidelity_brackets SET size=? WHERE bracket=?", (size, bracket))

    def current_rung(self, arch_id: int) -> Optional[dict]:
        with self._lock:
            row = self.conn.execute("SELECT rung, bracket, epochs FROM arch_rungs WHERE arch_id=? ORDER BY rung DESC "
                                    "LIMIT 1", (arch_id,)).fetchone()
        return None if row is None else {"rung": row[0], "bracket": row[1], "epochs": row[2]}

    def enter_rung(self, arch_ids: Iterable[int], rung: int, bracket: int, epochs: int) -> None:
        with self._tx() as c:
            c.executemany("INSERT INTO arch_rungs(arch_id, rung, bracket, epochs) VALUES (?,?,?,?)",
                          [(a, rung, bracket, epochs) for a in arch_ids])

    def bracket_rungs(self, bracket: int, rung: int) -> List[dict]:
        """The members of a bracket's rung with their result at it (the architecture's own
        while it has not left the rung)."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT r.arch_id, r.promoted, r.status, r.valid_acc, a.status, a.valid_acc FROM arch_rungs r "
                "JOIN archs a ON a.arch_id=r.arch_id WHERE r.bracket=? AND r.rung=? ORDER BY r.arch_id",
                (bracket, rung)).fetchall()
        return [{"arch_id": a, "status": rs if p else s, "valid_acc": rv if p else v} for a, p, rs, rv, s, v in rows]

    def left_rungs(self, arch_id: int) -> List[dict]:
        with self._lock:
            rows = self.conn.execute("SELECT rung, status, valid_acc, finished FROM arch_rungs WHERE arch_id=? AND "
                                     "promoted=1 ORDER BY rung", (arch_id,)).fetchall()
        return [{"rung": r, "status": s, "valid_acc": v, "finished": f} for r, s, v, f in rows]

    def promote(self, arch_ids: Iterable[int], rung: int, next_rung: int, bracket: int, epochs: int) -> None:
        """Move architectures to the next rung, all in one transaction: the rung's results go to
        its arch_rungs row, the seeds are cleared and the architecture trains again (its
        accuracy stays the best available until the next rung finishes)."""
        now = time.time()
        with self._tx() as c:
            for arch_id in arch_ids:
                seeds = c.execute("SELECT seed, job_id, status, valid_acc, test_acc, seconds, epochs, error_kind "
                                  "FROM arch_seeds WHERE arch_id=? ORDER BY seed", (arch_id,)).fetchall()
                keys = ("seed", "job_id", "status", "valid_acc", "test_acc", "seconds", "epochs", "error_kind")
                c.execute("UPDATE arch_rungs SET promoted=1, status=(SELECT status FROM archs WHERE arch_id=?), "
                          "valid_acc=(SELECT valid_acc FROM archs WHERE arch_id=?), "
                          "test_acc=(SELECT test_acc FROM archs WHERE arch_id=?), "
                          "finished=(SELECT finished FROM archs WHERE arch_id=?), seconds=?, seeds=? "
                          "WHERE arch_id=? AND rung=?",
                          (arch_id, arch_id, arch_id, arch_id, sum(s[5] or 0.0 for s in seeds),
                           json.dumps([dict(zip(keys, s)) for s in seeds]), arch_id, rung))
                c.execute("DELETE FROM arch_seeds WHERE arch_id=?", (arch_id,))
                c.execute("INSERT INTO arch_rungs(arch_id, rung, bracket, epochs) VALUES (?,?,?,?)",
                          (arch_id, next_rung, bracket, epochs))
                c.execute("UPDATE archs SET status='training', seeds_done=0, finished=NULL, started=?, updated=? "
                          "WHERE arch_id=?", (now, now, arch_id))
