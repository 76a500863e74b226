"""Record of every LLM call in the run's SQLite database (`RUN/runs.sqlite`, table `llm_calls`).

Each row holds the request (model, messages or embedding input, the parameters sent), the reply,
the usage, the latency and where the reply came from: `endpoint`, `cache` (an earlier identical
call of this run) or `replay` (a recorded run). Requests are content-addressed: `key` is the
SHA-256 of the canonical JSON of kind, model, messages/input and parameters, and `occurrence`
counts identical requests within one session, so the n-th identical request is answered by the
n-th recorded reply (a sampled reply repeated on purpose gets a fresh sample once the record is
used up, and a replay reproduces the recorded sequence).
"""
from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Optional


from nader.runtime.integrity import json_cell, text_factory

from .accounting import Tally
from .errors import LLMConfigError
from .jsonreply import MAX_REPLY_CHARS

DB_NAME = "runs.sqlite"  # the run store's database (nader.runtime.store.DB_NAME)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS llm_calls (
    call_id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    occurrence INTEGER NOT NULL,
    kind TEXT NOT NULL,                -- chat | embed
    model TEXT NOT NULL,
    role TEXT, arch_id TEXT, prompt TEXT,
    request TEXT NOT NULL,             -- JSON {kind, model, messages|input, params}
    reply TEXT,                        -- JSON; NULL when the call failed
    status TEXT NOT NULL,              -- ok | failed | rejected (a reply its caller could not use)
    source TEXT NOT NULL,              -- endpoint | cache | replay
    error TEXT,
    prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd REAL,
    latency_s REAL, attempts INTEGER, created REAL
);
CREATE INDEX IF NOT EXISTS llm_calls_key ON llm_calls(key, call_id);
"""
# A reply answers later identical requests only where it was first obtained (rows answered from
# this same record, source = cache, repeat an earlier row). A rejected reply (one its caller could
# not parse) is asked for again in the same run, but a replay reproduces it.
_ANSWERING = "status = 'ok' AND source IN ('endpoint', 'replay')"
_REPLAYING = "status IN ('ok', 'rejected') AND source IN ('endpoint', 'replay')"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict) -> str:
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def bounded_reply(reply: Optional[dict]) -> Optional[dict]:
    """A reply as recorded: a text over MAX_REPLY_CHARS (which every caller refuses unread) keeps
    only its first MAX_REPLY_CHARS + 1 characters, so a cache or a replay is refused the same way,
    with its whole length and SHA-256 beside it."""
    text = reply.get("text") if isinstance(reply, dict) else None
    if not isinstance(text, str) or len(text) <= MAX_REPLY_CHARS:
        return reply
    whole = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return {**reply, "text": text[:MAX_REPLY_CHARS + 1], "length": len(text), "sha256": whole}


def encode_vectors(vectors: list[list[float]]) -> dict:
    """Embeddings as base64 float32 (what servers compute in), a quarter of their JSON size."""
    import numpy as np  # only embeddings need it

    array = np.asarray(vectors, dtype="<f4")
    return {"dtype": "float32", "shape": list(array.shape), "b64": base64.b64encode(array.tobytes()).decode("ascii")}


def decode_vectors(reply: dict) -> list[list[float]]:
    import numpy as np

    array = np.frombuffer(base64.b64decode(reply["b64"]), dtype="<f4").reshape(reply["shape"])
    return array.astype(float).tolist()


class CallStore:
    """One connection to `RUN/runs.sqlite` for the `llm_calls` table (thread-safe)."""

    def __init__(self, run_dir, *, read_only: bool = False):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / DB_NAME
        self._lock = threading.Lock()
        if read_only:
            if not self.path.is_file():
                raise LLMConfigError(f"no recorded run at {self.run_dir} ({DB_NAME} not found)")
            self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False,
                                        isolation_level=None, timeout=60.0)
            self.conn.text_factory = text_factory
            if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name='llm_calls'").fetchone():
                raise LLMConfigError(f"{self.path} holds no recorded LLM calls (no llm_calls table)")
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
        self.conn.text_factory = text_factory  # a cell that is not UTF-8 reads as marked text, not an error
        self.conn.execute("PRAGMA busy_timeout=60000")
        self.conn.execute("PRAGMA journal_mode=WAL")
        # WAL with synchronous=NORMAL never corrupts; a power cut may lose the last rows, which the
        # next session asks for again. FULL would fsync every call (about 7 ms here).
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    # ---------------------------------------------------------------- writes
    def put(self, *, key: str, occurrence: int, request: dict, role: str, arch_id: Optional[str],
            prompt: Optional[str], reply: Optional[dict], status: str, source: str, error: Optional[str] = None,
            prompt_tokens: Optional[int] = None, completion_tokens: Optional[int] = None,
            cost_usd: Optional[float] = None, latency_s: Optional[float] = None, attempts: int = 0) -> int:
        row = (key, occurrence, request["kind"], request["model"], role, None if arch_id is None else str(arch_id),
               prompt, canonical_json(request), None if reply is None else canonical_json(bounded_reply(reply)),
               status, source,
               error, prompt_tokens, completion_tokens, cost_usd, latency_s, attempts, time.time())
        with self._lock:
            cur = self.conn.execute(
                "INSERT INTO llm_calls(key, occurrence, kind, model, role, arch_id, prompt, request, reply, status,"
                " source, error, prompt_tokens, completion_tokens, cost_usd, latency_s, attempts, created)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
            return int(cur.lastrowid)

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # ---------------------------------------------------------------- reads
    def get_meta(self, key: str) -> Optional[str]:
        with self._lock:
            try:
                row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            except sqlite3.OperationalError:  # a record older than the meta table
                return None
        return None if row is None else row[0]

    def get_meta_dict(self, key: str) -> dict:
        """A meta value written as a JSON object: {} where absent or unreadable."""
        value = json_cell(self.get_meta(key), "meta", f"key={key}", "value", [], expect=(dict,))  # bounded depth
        return value if isinstance(value, dict) else {}

    def reject(self, call_id: int, reason: str) -> None:
        """Mark a reply its caller could not use (a malformed JSON reply), with the reason."""
        with self._lock:
            self.conn.execute("UPDATE llm_calls SET status = 'rejected', error = ? WHERE call_id = ?", (reason, call_id))

    def answer(self, key: str, occurrence: int, *, replaying: bool = False) -> Optional[tuple]:
        """The `occurrence`-th reply recorded for this request (0-based), or None:
        (call_id, reply JSON, prompt tokens, completion tokens, status)."""
        where = _REPLAYING if replaying else _ANSWERING
        with self._lock:
            cur = self.conn.execute(
                "SELECT call_id, reply, prompt_tokens, completion_tokens, status FROM llm_calls"
                f" WHERE key = ? AND {where} ORDER BY call_id LIMIT 1 OFFSET ?", (key, occurrence))
            return cur.fetchone()

    def last_occurrences(self, arch_id: str) -> dict[str, int]:
        """The highest occurrence recorded, per request key, among the calls made for `arch_id`."""
        with self._lock:
            rows = self.conn.execute("SELECT key, MAX(occurrence) FROM llm_calls WHERE arch_id = ? GROUP BY key",
                                     (str(arch_id),)).fetchall()
        return {key: occurrence for key, occurrence in rows}

    def similar_requests(self, kind: str, role: str, limit: int = 200) -> list[dict]:
        with self._lock:
            rows = self.conn.execute(
                f"SELECT request FROM llm_calls WHERE kind = ? AND role IS ? AND {_REPLAYING} ORDER BY call_id LIMIT ?",
                (kind, role, limit)).fetchall()
        found = (json_cell(r[0], "llm_calls", "?", "request", [], expect=(dict,)) for r in rows)
        return [request for request in found if request is not None]

    def count(self, kind: Optional[str] = None) -> int:
        with self._lock:
            if kind is None:
                return self.conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0]
            return self.conn.execute("SELECT COUNT(*) FROM llm_calls WHERE kind = ?", (kind,)).fetchone()[0]

    def spent(self) -> Tally:
        """What the endpoint calls of this run cost so far (all sessions): the caps apply to the run."""
        with self._lock:
            calls, failed, p, c, cost, unpriced = self.conn.execute(
                "SELECT COALESCE(SUM(status != 'failed'), 0), COALESCE(SUM(status = 'failed'), 0),"
                " COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
                " COALESCE(SUM(cost_usd), 0.0), COALESCE(SUM(status != 'failed' AND cost_usd IS NULL), 0)"
                " FROM llm_calls WHERE source = 'endpoint'").fetchone()
        return Tally(calls=calls, failed_calls=failed, prompt_tokens=p, completion_tokens=c, cost_usd=cost,
                     unpriced_calls=unpriced)

    def rows(self, where: str = "1", params: tuple = ()) -> list[dict]:
        """Rows as dicts; `where` is SQL written by the caller (values go in `params`)."""
        with self._lock:
            cur = self.conn.execute(f"SELECT * FROM llm_calls WHERE {where} ORDER BY call_id", params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]
