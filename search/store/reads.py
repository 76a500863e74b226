"""The queries that read a run: the tree, every architecture's record, the sessions, the stored
settings. Shared by the writer (`SearchStore`, which holds the run's lock) and the reader
(`RunReader`, a read-only connection while a search may be running), so each query is written
once.

A damaged cell (bad JSON, a wrong type, text that is not UTF-8) is left out (None) and
described in `problems`, so one bad cell does not hide the rest of the run.
"""
from __future__ import annotations

import math
from typing import List, Optional

from nader.runtime.integrity import BadText, cell_problem, json_cell, number_cell, unreadable_cell
from nader.runtime.store import DB_NAME

from ..tree import TreeNode

CONFIG_KEY = "search.config"  # the meta row holding the run's settings (JSON)

#: an architecture's plain columns, as `records` and `nader-search export` give them
COLUMNS = ("arch_id", "parent_id", "depth", "status", "origin", "operator", "duplicate_of", "hash", "params", "flops",
           "widths", "binding", "valid_acc", "valid_std", "test_acc", "test_std", "seconds", "seeds_done", "attempts",
           "tokens_in", "tokens_out", "cost_usd", "created", "started", "finished")
_JSON_COLUMNS = {"change": (dict,), "diagnostics": (dict, list), "widths": (list,), "prescreen": (dict,),
                 "objectives": (dict,), "user_attrs": (dict,)}
#: columns added after the first release that records carry when the store has them (sqlite.ADDED_COLUMNS)
_LATER_COLUMNS = ("objectives", "user_attrs")
_SEED_KEYS = ("arch_id", "seed", "job_id", "status", "valid_acc", "test_acc", "seconds", "epochs", "error",
              "error_kind")
# What each plain column must hold; a damaged cell of another type is left out (None) with a warning.
_INT, _NUM, _STR = (int,), (int, float), (str,)
_TYPES = {"parent_id": _INT, "depth": _INT, "status": _STR, "origin": _STR, "operator": _STR, "duplicate_of": _INT,
          "hash": _STR, "params": _INT, "flops": _INT, "binding": _STR, "valid_acc": _NUM, "valid_std": _NUM,
          "test_acc": _NUM, "test_std": _NUM, "seconds": _NUM, "seeds_done": _INT, "attempts": _INT,
          "tokens_in": _INT, "tokens_out": _INT, "cost_usd": _NUM, "created": _NUM, "started": _NUM,
          "finished": _NUM, "text": _STR, "seed": _INT, "job_id": _STR, "epochs": _INT, "error": _STR,
          "error_kind": _STR}
_REQUIRED = {"status": "damaged", "depth": 0, "origin": "?"}  # shown in place of a damaged cell the tables need

_NODE_COLUMNS = ("arch_id, parent_id, depth, status, text, hash, duplicate_of, origin, operator, change, "
                 "widths, params, flops, valid_acc, finished, seeds_done, attempts, "
                 "COALESCE((SELECT MAX(rung) FROM arch_rungs r WHERE r.arch_id=archs.arch_id), 0), objectives")
_SESSION_KEYS = ("session", "started", "ended", "stop_reason")


def _tree_node(row, problems: list) -> TreeNode:
    (arch_id, parent_id, depth, status, text, hsh, dup, origin, operator, change, widths, params, flops, valid_acc,
     finished, seeds_done, attempts, rung, objectives) = row
    where = ("archs", f"arch_id={arch_id}")
    widths = json_cell(widths, *where, "widths", problems, expect=(list,))
    if widths is not None and not all(isinstance(w, int) for w in widths):
        problems.append(f"{DB_NAME}: table archs, row arch_id={arch_id}, column widths: not a list of integers; "
                        f"left out")
        widths = None
    for name, value in (("status", status), ("text", text), ("hash", hsh), ("origin", origin), ("operator", operator)):
        if isinstance(value, BadText):  # the search cannot use it; the readers say the same per cell
            problems.append(cell_problem(*where, name, unreadable_cell(value)))
    text = None if isinstance(text, BadText) else text
    hsh = None if isinstance(hsh, BadText) else hsh
    operator = None if isinstance(operator, BadText) else operator
    valid_acc = number_cell(valid_acc, *where, "valid_acc", problems)
    params, flops = (number_cell(v, *where, name, problems) for name, v in (("params", params), ("flops", flops)))
    return TreeNode(arch_id=arch_id, parent_id=parent_id, depth=depth, status=status, text=text, hash=hsh,
                    duplicate_of=dup, origin=origin, operator=operator,
                    change=json_cell(change, *where, "change", problems, expect=(dict,)) or {},
                    widths=widths, params=params, flops=flops, valid_acc=valid_acc, finished=finished,
                    seeds_done=seeds_done, attempts=attempts, rung=rung,
                    objectives=json_cell(objectives, *where, "objectives", problems, expect=(dict,)) or {})


def _clean(rec: dict, table: str, row: str, problems: list) -> dict:
    for key, cell in rec.items():
        want = _TYPES.get(key)
        if isinstance(cell, BadText):
            problems.append(cell_problem(table, row, key, unreadable_cell(cell)))
            rec[key] = _REQUIRED.get(key)
            continue
        if isinstance(cell, float) and not math.isfinite(cell) and want is _NUM:
            problems.append(cell_problem(table, row, key, f"expected a finite number, found {cell!r}"))
            rec[key] = None
            continue
        if cell is None or want is None or (isinstance(cell, want) and not isinstance(cell, bool)):
            continue
        problems.append(cell_problem(table, row, key, f"expected {'text' if want is _STR else 'a number'}, "
                                                      f"found {cell!r:.40}"))
        rec[key] = _REQUIRED.get(key)
    return rec


def _decoded(cell) -> Optional[str]:
    """A cell read as bytes, decoded leniently (at most 2,000 bytes): a summary never stops on one."""
    return None if cell is None else bytes(cell)[:2000].decode("utf-8", "replace")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class TreeReads:
    """The read queries, on `self.conn` under `self._lock` (the classes that mix this in hold both);
    damaged cells met by `nodes` go to `self.problems`."""

    # ------------------------------------------------------------------ the tree
    def nodes(self) -> List[TreeNode]:
        """Every architecture, in id order, as strategies see it."""
        with self._lock:
            rows = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM archs ORDER BY arch_id").fetchall()
        return [_tree_node(r, self.problems) for r in rows]

    def node(self, arch_id: int) -> Optional[TreeNode]:
        with self._lock:
            row = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM archs WHERE arch_id=?", (arch_id,)).fetchone()
        return None if row is None else _tree_node(row, self.problems)

    def _has_table(self, name: str) -> bool:
        with self._lock:
            return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                                     (name,)).fetchone() is not None

    def _columns(self, table: str) -> set:
        with self._lock:
            return {r[1] for r in self.conn.execute(f"PRAGMA table_info({_quoted(table)})")}

    def records(self, with_text: bool = True, problems: Optional[list] = None,
                arch_id: Optional[int] = None) -> List[dict]:
        """Every architecture's record (or only `arch_id`'s), in id order, with its per-seed results
        under "seeds", a Python objective's attributes under "user_attrs" ({} when none) and, in a
        multi-fidelity search, its rungs under "rungs" (`nader-search export`)."""
        problems = [] if problems is None else problems
        cols = list(COLUMNS) + ["change", "diagnostics", "prescreen"] + (["text"] if with_text else [])
        have = self._columns("archs")
        cols += [c for c in _LATER_COLUMNS if c in have]  # added later (sqlite.ADDED_COLUMNS)
        clause, args = ("WHERE arch_id=?", (arch_id,)) if arch_id is not None else ("", ())
        with self._lock:
            rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM archs {clause} ORDER BY arch_id", args).fetchall()
            seed_rows = self.conn.execute(f"SELECT {', '.join(_SEED_KEYS)} FROM arch_seeds {clause} "
                                          f"ORDER BY arch_id, seed", args).fetchall()
        out = []
        for row in rows:
            rec = dict(zip(cols, tuple(row)))
            where = f"arch_id={rec['arch_id']}"
            for key, expect in _JSON_COLUMNS.items():
                if key in rec:
                    rec[key] = json_cell(rec[key], "archs", where, key, problems, expect)
            rec["user_attrs"] = rec.get("user_attrs") or {}
            out.append(_clean(rec, "archs", where, problems))
        seeds: dict = {}
        for row in seed_rows:
            d = dict(zip(_SEED_KEYS, tuple(row)))
            _clean(d, "arch_seeds", f"arch_id={d['arch_id']} seed={d['seed']}", problems)
            seeds.setdefault(d.pop("arch_id"), []).append(d)
        rungs = self._rungs({r["arch_id"]: r for r in out})
        for rec in out:
            rec["seeds"] = seeds.get(rec["arch_id"], [])
            if rec["arch_id"] in rungs:  # multi-fidelity searches only: other exports stay as they were
                rec["rungs"] = rungs[rec["arch_id"]]
        return out

    def _rungs(self, by_id: dict) -> dict:
        """arch_id -> [{rung, epochs, status, valid_acc, test_acc, promoted}], lowest rung first; the
        rung an architecture is at has its own record's results once finished."""
        if not self._has_table("arch_rungs"):
            return {}
        with self._lock:
            rows = self.conn.execute("SELECT arch_id, rung, epochs, promoted, status, valid_acc, test_acc "
                                     "FROM arch_rungs ORDER BY arch_id, rung").fetchall()
        out: dict = {}
        for arch_id, rung, epochs, promoted, status, valid, test in rows:
            if not promoted:
                rec = by_id.get(arch_id, {})
                status = rec.get("status")
                valid, test = (rec.get("valid_acc"), rec.get("test_acc")) \
                    if status in ("ok", "diverged", "failed") else (None, None)
            out.setdefault(arch_id, []).append({"rung": rung, "epochs": epochs, "status": status, "valid_acc": valid,
                                                "test_acc": test, "promoted": bool(promoted)})
        return out

    def reports(self) -> List[tuple]:
        """(arch_id, seed, step, value) of everything Python objectives reported (`arch.report`), in
        order; value None where NaN was reported. Empty for a run made before reports existed."""
        if not self._has_table("arch_reports"):
            return []
        with self._lock:
            rows = self.conn.execute("SELECT arch_id, seed, step, value FROM arch_reports "
                                     "ORDER BY arch_id, seed, step").fetchall()
        return [tuple(r) for r in rows if all(isinstance(x, int) for x in r[:3])
                and (r[3] is None or isinstance(r[3], (int, float)))]

    def counts(self) -> dict:
        """status -> how many architectures have it."""
        with self._lock:
            return {s: n for s, n in self.conn.execute("SELECT status, COUNT(*) FROM archs GROUP BY status "
                                                       "ORDER BY status")}

    def failed_seeds(self) -> List[tuple]:
        """(arch_id, status, error_kind, error) of every failed or diverged architecture's seeds that
        did not finish ok, in id and seed order; text decoded leniently (a damaged cell must not stop
        a summary)."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT a.arch_id, CAST(a.status AS BLOB), CAST(s.error_kind AS BLOB), CAST(s.error AS BLOB) "
                "FROM archs a JOIN arch_seeds s ON s.arch_id = a.arch_id "
                "WHERE a.status IN ('failed', 'diverged') AND s.status != 'ok' ORDER BY a.arch_id, s.seed").fetchall()
        return [(arch_id, *(_decoded(c) for c in cells)) for arch_id, *cells in rows]

    def seconds_used(self) -> float:
        """Every evaluated architecture's seconds over all sessions: a tabular evaluator's simulated
        training time (`--time-limit sim:N`)."""
        with self._lock:
            return float(self.conn.execute("SELECT COALESCE(SUM(seconds), 0) FROM archs").fetchone()[0])

    def spent(self) -> tuple:
        """(tokens in + out, dollars) over the whole run, all sessions, as the LLM client's caps count
        them: its ledger (`llm_calls` rows an endpoint answered) when the run has one, so the loop
        stops where the client would; else the usage recorded on the architectures."""
        with self._lock:
            if self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='llm_calls'").fetchone():
                t, d = self.conn.execute(
                    "SELECT COALESCE(SUM(COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0)), 0), "
                    "COALESCE(SUM(COALESCE(cost_usd, 0)), 0) FROM llm_calls WHERE source='endpoint'").fetchone()
            else:
                t, d = self.conn.execute("SELECT COALESCE(SUM(tokens_in + tokens_out), 0), "
                                         "COALESCE(SUM(cost_usd), 0) FROM archs").fetchone()
        return int(t), float(d)

    # ------------------------------------------------------------------ settings and sessions
    def meta(self, key: str):
        """The runtime's `meta` table's value for `key` (None when absent, or without the table)."""
        if not self._has_table("meta"):
            return None
        with self._lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def stored_config(self, problems: Optional[list] = None) -> dict:
        """The run's settings as stored ({} when there are none, or they are damaged: described in
        `problems`)."""
        value = self.meta(CONFIG_KEY)
        problems = [] if problems is None else problems
        return (json_cell(value, "meta", f"key={CONFIG_KEY}", "value", problems, (dict,)) if value else None) or {}

    def sessions(self) -> List[dict]:
        """Every `nader-search run` session: session, started, ended, stop_reason (None while running,
        or when the process was killed)."""
        with self._lock:
            rows = self.conn.execute("SELECT session, started, ended, stop_reason FROM search_sessions "
                                     "ORDER BY session").fetchall()
        return [dict(zip(_SESSION_KEYS, tuple(r))) for r in rows]

    def session_config(self, session: int, problems: Optional[list] = None) -> dict:
        """The settings a session ran with ({} when damaged: described in `problems`)."""
        problems = [] if problems is None else problems
        with self._lock:
            row = self.conn.execute("SELECT config FROM search_sessions WHERE session=?", (session,)).fetchone()
        return (json_cell(row[0], "search_sessions", f"session={session}", "config", problems, (dict,))
                if row else None) or {}

    def proxy_stats(self) -> List[dict]:
        """Per proxy and setting (`proxies.ProxyCache`): architectures scored, how many were computed
        and in how many seconds, how many copied from a shared cache. [] before any (or a run from
        before proxies were stored)."""
        if not self._has_table("proxy_scores"):
            return []
        with self._lock:
            rows = self.conn.execute(
                "SELECT proxy, setting, COUNT(*), SUM(source='computed'), SUM(CASE WHEN source='computed' THEN seconds "
                "ELSE 0 END), SUM(score IS NULL) FROM proxy_scores GROUP BY proxy, setting ORDER BY proxy, setting"
            ).fetchall()
        return [{"proxy": p, "setting": s, "scored": n, "computed": c or 0, "seconds": float(t or 0.0),
                 "copied": n - (c or 0), "failed": f or 0} for p, s, n, c, t, f in rows]

    def job_spec(self, job_id: str) -> Optional[str]:
        """The runtime's spec (JSON) of a training job; None when the run has no such job (a tabular
        run has no jobs table)."""
        if not self._has_table("jobs"):
            return None
        with self._lock:
            row = self.conn.execute("SELECT spec FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return row[0] if row else None


def lost_architectures(conn) -> List[str]:
    """What a recovered copy of a run shows missing: the architectures whose ids are gone (the
    search numbers them 0, 1, 2, ... so a gap is a lost row). The search hands this to the
    runtime's recovery (`nader.runtime.recovery.recover(..., lost=...)`), which knows no table of
    ours."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='archs'").fetchone() is None:
        return []
    ids = [r[0] for r in conn.execute("SELECT arch_id FROM archs ORDER BY arch_id")]
    missing = sorted(set(range(ids[-1] + 1)) - set(ids)) if ids else []
    if not missing:
        return []
    shown = ", ".join(f"#{i}" for i in missing[:20]) + (" ..." if len(missing) > 20 else "")
    return [f"architectures {shown} ({len(missing)} of {ids[-1] + 1})"]

