"""Reading a run: every architecture's record, the best one, the tree as a table, exports.

These read the database only (a read-only connection works while a search is running).
The best architecture is the one with the highest mean *validation* accuracy among those that
trained successfully (ties: fewer parameters, then the older); test accuracy is reported beside
it and never used to choose. In a multi-fidelity search (`nader.search.fidelity`) the highest
rung reached comes first: an architecture trained only briefly never ranks above one trained
longer, whatever its accuracy.
"""
from __future__ import annotations

import csv
import io
import json
import math
from typing import List, Optional

from nader.runtime.cli import human  # the runtime tables' count format (search/cli.py uses it from here)

COLUMNS = ("arch_id", "parent_id", "depth", "status", "origin", "operator", "duplicate_of", "hash", "params", "flops",
           "widths", "binding", "valid_acc", "valid_std", "test_acc", "test_std", "seconds", "seeds_done", "attempts",
           "tokens_in", "tokens_out", "cost_usd", "created", "started", "finished")
_JSON_COLUMNS = ("change", "diagnostics", "widths", "prescreen")


def records(conn, with_text: bool = True) -> List[dict]:
    """Every architecture, in id order, with its per-seed results under "seeds"."""
    cols = list(COLUMNS) + ["change", "diagnostics", "prescreen"] + (["text"] if with_text else [])
    rows = conn.execute(f"SELECT {', '.join(cols)} FROM archs ORDER BY arch_id").fetchall()
    out = []
    for row in rows:
        rec = dict(zip(cols, tuple(row)))
        for key in _JSON_COLUMNS:
            if rec.get(key):
                rec[key] = json.loads(rec[key])
        out.append(rec)
    seeds = {}
    for row in conn.execute("SELECT arch_id, seed, job_id, status, valid_acc, test_acc, seconds, epochs, error, "
                            "error_kind FROM arch_seeds ORDER BY arch_id, seed"):
        keys = ("arch_id", "seed", "job_id", "status", "valid_acc", "test_acc", "seconds", "epochs", "error",
                "error_kind")
        d = dict(zip(keys, tuple(row)))
        seeds.setdefault(d.pop("arch_id"), []).append(d)
    rungs = _rungs(conn, {r["arch_id"]: r for r in out})
    for rec in out:
        rec["seeds"] = seeds.get(rec["arch_id"], [])
        if rec["arch_id"] in rungs:  # multi-fidelity searches only: other exports stay as they were
            rec["rungs"] = rungs[rec["arch_id"]]
    return out


def _has_rungs(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='arch_rungs'").fetchone() is not None


def _rungs(conn, by_id: dict) -> dict:
    """arch_id -> [{rung, epochs, status, valid_acc, test_acc, promoted}], lowest rung first; the
    rung an architecture is at has its own record's results once finished."""
    if not _has_rungs(conn):
        return {}
    out: dict = {}
    for arch_id, rung, epochs, promoted, status, valid, test in conn.execute(
            "SELECT arch_id, rung, epochs, promoted, status, valid_acc, test_acc FROM arch_rungs "
            "ORDER BY arch_id, rung"):
        if not promoted:
            rec = by_id.get(arch_id, {})
            status = rec.get("status")
            valid, test = (rec.get("valid_acc"), rec.get("test_acc")) if status in ("ok", "diverged", "failed") \
                else (None, None)
        out.setdefault(arch_id, []).append({"rung": rung, "epochs": epochs, "status": status, "valid_acc": valid,
                                            "test_acc": test, "promoted": bool(promoted)})
    return out


def best(conn) -> Optional[dict]:
    rung = "COALESCE((SELECT MAX(rung) FROM arch_rungs r WHERE r.arch_id=archs.arch_id), 0)" if _has_rungs(conn) \
        else "0"
    row = conn.execute(f"SELECT arch_id FROM archs WHERE status='ok' AND valid_acc IS NOT NULL "
                       f"ORDER BY {rung} DESC, valid_acc DESC, COALESCE(params, 0), arch_id LIMIT 1").fetchone()
    if row is None:
        return None
    return next(r for r in records(conn) if r["arch_id"] == row[0])


def counts(conn) -> dict:
    return {s: n for s, n in conn.execute("SELECT status, COUNT(*) FROM archs GROUP BY status ORDER BY status")}


def counts_of(recs: List[dict]) -> dict:
    out: dict = {}
    for r in recs:
        out[r["status"]] = out.get(r["status"], 0) + 1
    return dict(sorted(out.items()))


def _num(v, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec)


def _change(rec: dict) -> str:
    if rec["origin"] == "root":
        return "root"
    if rec["status"] == "duplicate":
        return f"{rec['operator'] or rec['origin']} (= #{rec['duplicate_of']})"
    return rec["operator"] or rec["origin"]


def tree_order(recs: List[dict]) -> List[dict]:
    """Depth-first, children in id order: each architecture under its parent."""
    kids = {}
    for r in recs:
        kids.setdefault(r["parent_id"], []).append(r)
    out, stack = [], list(reversed(kids.get(None, [])))
    while stack:
        r = stack.pop()
        out.append(r)
        stack.extend(reversed(kids.get(r["arch_id"], [])))
    seen = {r["arch_id"] for r in out}
    return out + [r for r in recs if r["arch_id"] not in seen]


def rungs_text(rec: dict) -> str:
    """A multi-fidelity architecture's rungs: `61.20@1ep ^ 63.05@3ep` (^ promoted)."""
    return " ".join(f"{_num(r['valid_acc'], '.2f') if r['valid_acc'] is not None else r['status']}@{r['epochs']}ep"
                    + (" ^" if r["promoted"] else "") for r in rec.get("rungs", []))


def status_table(recs: List[dict]) -> str:
    head = ["arch", "status", "change", "params", "flops", "valid", "test", "seconds"]
    laddered = any(r.get("rungs") for r in recs)
    rows = []
    for r in tree_order(recs):
        rows.append(["  " * r["depth"] + f"#{r['arch_id']}", r["status"], _change(r)[:32], human(r["params"]),
                     human(r["flops"]), _num(r["valid_acc"], ".2f"), _num(r["test_acc"], ".2f"),
                     _num(r["seconds"], ".1f")] + ([rungs_text(r)] if laddered else []))
    head += ["rungs (^ promoted)"] if laddered else []
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    align = [str.ljust, str.ljust, str.ljust] + [str.rjust] * 5 + [str.ljust]
    lines = ["  ".join(a(h, w) for a, h, w in zip(align, head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(a(c, w) for a, c, w in zip(align, row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def summary_line(counts_: dict) -> str:
    trained = sum(counts_.get(s, 0) for s in ("ok", "diverged", "failed", "training", "proposed"))
    rest = ", ".join(f"{n} {s}" for s, n in sorted(counts_.items()) if n)
    return f"{sum(counts_.values())} architectures, {trained} trials ({rest})"


def lineage(rec: dict) -> str:
    """`parent #3, insert-se` for a child; `root` for the root, which has no parent."""
    return _change(rec) if rec["parent_id"] is None else f"parent #{rec['parent_id']}, {_change(rec)}"


def best_text(rec: dict) -> str:
    """The best architecture's text with a comment header (valid .nad, ready for nadc)."""
    head = (f"# nader-search best: arch #{rec['arch_id']} ({lineage(rec)}), "
            f"valid {_num(rec['valid_acc'], '.2f')}%, test {_num(rec['test_acc'], '.2f')}%, "
            f"{human(rec['params'])} params, {human(rec['flops'])} FLOPs, widths {rec['widths']}\n")
    return head + rec["text"].rstrip("\n") + "\n"


EXPORT_FIELDS = list(COLUMNS) + ["change", "diagnostics", "prescreen", "seeds", "text"]


def export_json(recs: List[dict]) -> str:
    return json.dumps(recs, indent=2, sort_keys=False, default=str) + "\n"


def export_csv(recs: List[dict]) -> str:
    """One row per architecture; structured fields (change, seeds, ...) as JSON text."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=EXPORT_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in recs:
        w.writerow({k: (json.dumps(r.get(k)) if isinstance(r.get(k), (dict, list)) else r.get(k))
                    for k in EXPORT_FIELDS})
    return buf.getvalue()
