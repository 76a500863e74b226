"""Read a run directory into the report's model (`ReportArch`, `Run`).

Reads `RUN/runs.sqlite` through the store's reader (read-only, so it works while a search is
running): the tree (`archs`, with per-seed results from `arch_seeds`), the configuration of the
latest `nader-search run` session and what the LLM client recorded of the server in `meta`.
"""
from __future__ import annotations

import json
from pathlib import Path

from nader.agents.llm.client import SYSTEM_MERGE_META
from nader.agents.llm.served import MODEL_NAME_META
from nader.runtime.integrity import json_cell
from nader.search.proxies import stored_lines
from nader.search.records import records  # the tree's one reader

from ..store import BaseReader, RunReader
from .model import ReportArch, Run


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


def _llm_notes(reader: BaseReader, problems: list) -> list[str]:
    """The messages of the client's findings (`system_merge`, `model_name`: {model: {message, ...}})."""
    notes = []
    for key in (SYSTEM_MERGE_META, MODEL_NAME_META):
        value = reader.meta(key)
        found = json_cell(value, "meta", f"key={key}", "value", problems, (dict,)) if value is not None else None
        for finding in (found or {}).values():
            message = finding.get("message") if isinstance(finding, dict) else None
            if isinstance(message, str) and message:
                notes.append(message[:NOTE_CHARS])
    return notes


def load_run(run_dir, problems: list | None = None, repairing: bool = False) -> tuple[Run, list[ReportArch]]:
    """The run and its architectures; damaged cells are left out and described in `problems`, as
    is an index that disagrees with its table (raised instead when `repairing`: --repair)."""
    problems = [] if problems is None else problems
    run_dir = Path(run_dir)
    with RunReader(run_dir, repairing=repairing) as reader:
        problems.extend(reader.warnings)
        recs = records(reader, problems=problems)
        sessions = reader.sessions()
        config = reader.session_config(sessions[-1]["session"], problems) if sessions else {}
        notes = _llm_notes(reader, problems)
        proxies = stored_lines(reader.proxy_stats())
    starts = [s["started"] for s in sessions if isinstance(s["started"], (int, float))]
    run = Run(name=run_dir.resolve().name, dataset=str(config.get("dataset", "")), preset=str(config.get("preset", "")),
              strategy=str(config.get("strategy", "")), started=min(starts) if starts else None, config=config,
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
        archs.append(ReportArch(
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
