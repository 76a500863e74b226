"""Read a run directory into the report's model (`Arch`, `Run`).

Reads `RUN/runs.sqlite` through a read-only connection, so it works while a search is running:
the tree (`archs`, with per-seed results from `arch_seeds`), the configuration of the latest
`nader-search run` session and what the LLM client recorded of the server in `meta`.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from nader.agents.llm.client import SYSTEM_MERGE_META
from nader.agents.llm.served import MODEL_NAME_META
from nader.runtime.integrity import check_database, connect_readonly, json_cell
from nader.runtime.store import DB_NAME
from nader.search.proxies import stored_lines
from nader.search.records import records  # the tree's one reader
from nader.search.store import proxy_stats

from .model import Arch, Run


class RunNotFound(Exception):
    """The directory holds no search (no database, or no tree in it)."""


def _connect(run_dir: Path) -> sqlite3.Connection:
    """Read-only, after the integrity check (StoreError when the database is damaged)."""
    path = Path(run_dir) / DB_NAME
    if not path.is_file():
        raise RunNotFound(f"{run_dir}: no search here ({DB_NAME} is missing)")
    check_database(path)
    conn = connect_readonly(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "archs" not in tables:
        conn.close()
        raise RunNotFound(f"{run_dir}: the database holds no search tree (was it made by `nader-search eval`?)")
    return conn


def _diagnostics(value) -> list:
    if not value:
        return []
    data = json.loads(value) if isinstance(value, str) else value
    listed = data.get("diagnostics") if isinstance(data, dict) else data
    out = [dict(d) for d in listed or [] if isinstance(d, dict)]
    for d in out:
        d.setdefault("severity", "error")
    if not out and isinstance(data, dict) and data.get("message"):
        out = [{"code": data.get("code", ""), "message": data["message"], "severity": "error"}]
    return out


NOTE_CHARS = 500  # a recorded message is the server's and our text: bounded in the page


def _llm_notes(conn: sqlite3.Connection, problems: list) -> list[str]:
    """The messages of the client's findings (`system_merge`, `model_name`: {model: {message, ...}})."""
    notes = []
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone() is None:
        return notes
    for key in (SYSTEM_MERGE_META, MODEL_NAME_META):
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        found = json_cell(row[0], "meta", f"key={key}", "value", problems, (dict,)) if row else None
        for finding in (found or {}).values():
            message = finding.get("message") if isinstance(finding, dict) else None
            if isinstance(message, str) and message:
                notes.append(message[:NOTE_CHARS])
    return notes


def load_run(run_dir, problems: list | None = None) -> tuple[Run, list[Arch]]:
    """The run and its architectures; damaged cells are left out and described in `problems`."""
    problems = [] if problems is None else problems
    run_dir = Path(run_dir)
    conn = _connect(run_dir)
    try:
        recs = records(conn, problems=problems)
        session = conn.execute("SELECT session, started, config FROM search_sessions ORDER BY session DESC "
                               "LIMIT 1").fetchone()
        first = conn.execute("SELECT MIN(started) FROM search_sessions").fetchone()
        notes = _llm_notes(conn, problems)
        proxies = stored_lines(proxy_stats(conn))
    finally:
        conn.close()
    config = (json_cell(session[2], "search_sessions", f"session={session[0]}", "config", problems, (dict,))
              if session else None) or {}
    run = Run(name=run_dir.resolve().name, dataset=str(config.get("dataset", "")), preset=str(config.get("preset", "")),
              strategy=str(config.get("strategy", "")),
              started=first[0] if first and isinstance(first[0], (int, float)) else None, config=config,
              llm_notes=notes, proxies=proxies)
    archs = []
    for r in recs:
        seeds = r.get("seeds") or []
        failure = next((s for s in seeds if s.get("status") != "ok"), None)
        change = r.get("change") or {}
        if not isinstance(change, dict):
            change = {"change": change}
        if r.get("operator") and "operator" not in change:
            change = {"operator": r["operator"], **change}
        archs.append(Arch(
            id=str(r["arch_id"]), parent=None if r["parent_id"] is None else str(r["parent_id"]), status=r["status"],
            text=r.get("text") or "", change=change, valid_acc=r.get("valid_acc"), test_acc=r.get("test_acc"),
            params=r.get("params"), flops=r.get("flops"), diagnostics=_diagnostics(r.get("diagnostics")),
            error_kind=(failure or {}).get("error_kind"), error=(failure or {}).get("error"),
            duplicate_of=None if r.get("duplicate_of") is None else str(r["duplicate_of"]),
            created=r.get("created"), finished=r.get("finished"), seconds=r.get("seconds"),
            tokens=int(r.get("tokens_in") or 0) + int(r.get("tokens_out") or 0), cost=float(r.get("cost_usd") or 0.0),
            llm_rounds=change.get("rounds") if isinstance(change.get("rounds"), int) else None,
            rungs=list(r.get("rungs") or []), origin=str(r.get("origin") or ""),
            objectives=r.get("objectives") if isinstance(r.get("objectives"), dict) else {}))
    return run, archs
