"""Reading a run: every architecture's record, the best one, the tree as a table, exports.

These take a reader of the run (`nader.search.store.RunReader`, or the writer itself at the end
of a search) and query nothing themselves. The best architecture is the one with the highest
mean *validation* accuracy among those that trained successfully (ties: fewer parameters, then
the older); test accuracy is reported beside it and never used to choose. In a multi-fidelity
search (`nader.search.fidelity`) the highest rung reached comes first: an architecture trained
only briefly never ranks above one trained longer, whatever its accuracy.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import List, Optional

from nader.compiler.reply_repair import REPAIRED
from nader.runtime.numbers import human  # the runtime tables' count format (search/cli.py uses it from here)

from .objectives import pareto_set, parse_objectives, value
from .store import COLUMNS, BaseReader


def records(reader: BaseReader, with_text: bool = True, problems: Optional[list] = None,
            arch_id: Optional[int] = None) -> List[dict]:
    """Every architecture (or only `arch_id`), in id order, with its per-seed results under "seeds",
    a Python objective's attributes under "user_attrs" and the compiler's repair of an LLM's
    proposal under "repair". A damaged cell (bad JSON, wrong type) is left out (None) and described
    in `problems`."""
    out = reader.records(with_text=with_text, problems=problems, arch_id=arch_id)
    for rec in out:
        rungs = rec.pop("rungs", None)
        rec["repair"] = repair_note(rec)
        if rungs is not None:  # multi-fidelity searches only: other exports stay as they were
            rec["rungs"] = rungs
    return out


def best(reader: BaseReader, problems: Optional[list] = None) -> Optional[dict]:
    """The trained architecture at the highest rung reached (multi-fidelity searches; else all are
    at rung 0; a pruned one, stopped early by a study's pruner, below its rung's trained ones) with
    the highest mean validation accuracy (ties: fewer parameters, then the older), chosen from the
    cleaned records (a damaged accuracy never wins)."""
    spec = objectives_of(reader)
    if spec != ["valid_acc:max"]:  # several objectives (or a Python objective's): the Pareto set's first
        front = pareto(reader, spec, problems)
        return front[0] if front else None
    ok = [r for r in records(reader, problems=problems) if r["status"] in ("ok", "pruned") and r["valid_acc"] is not None]
    return min(ok, key=lambda r: (-max((g["rung"] for g in r.get("rungs", ())), default=0), r["status"] == "pruned",
                                  -r["valid_acc"], r["params"] or 0, r["arch_id"]), default=None)


def objectives_of(reader: BaseReader) -> list:
    """The run's objectives as NAME:DIRECTION (its stored settings; valid_acc:max by default)."""
    spec = reader.stored_config(problems=[]).get("objectives")  # damaged settings: the default, quietly
    return list(spec) if isinstance(spec, list) and spec else ["valid_acc:max"]


def pareto(reader: BaseReader, objectives=None, problems: Optional[list] = None) -> List[dict]:
    """The non-dominated architectures of a run over `objectives` (default: the run's own),
    in the order of the first objective: `nader-search best --pareto`."""
    chosen = parse_objectives(objectives or objectives_of(reader))
    return pareto_set([r for r in records(reader, problems=problems) if r["status"] == "ok"], chosen)


def pareto_table(recs: List[dict], objectives) -> str:
    """The Pareto set as a table: id, each objective, parameters, FLOPs, test accuracy."""
    names = [o.name for o in parse_objectives(objectives)]
    head = ["arch"] + [n for n in names] + [c for c in ("params", "flops") if c not in names] + ["test_acc"]
    rows = [head]
    for r in recs:
        cells = [f"#{r['arch_id']}"]
        for n in head[1:]:
            cells.append(objective_text(value(r, n) if n != "test_acc" else r.get("test_acc")))
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows) + "\n"


_CELL = re.compile(r"\|[^\s|]+~\d\|(?:[^\s]*\|)?")  # a NAS-Bench-201 string, in an error message
_NUMBER = re.compile(r"(?<![\w@])\d+(?:\.\d+)?")
FAILURE_EXAMPLES = 5  # architecture ids listed per reason


def failures(reader: BaseReader) -> List[dict]:
    """Why trials failed or diverged, grouped: one entry per reason (the error's kind and its text,
    cell strings and counts aside), most frequent first: ``{"kind", "count", "example",
    "arch_ids"}`` (the first few architectures). Each architecture counts once, by its first
    failed seed."""
    groups: dict = {}
    seen: set = set()
    for arch_id, status, kind, error in reader.failed_seeds():
        if arch_id in seen:
            continue
        seen.add(arch_id)
        text = str(error or status)[:500]
        kind = str(kind or status)
        key = (kind, _NUMBER.sub("N", _CELL.sub("CELL", text)))
        group = groups.setdefault(key, {"kind": kind, "count": 0, "example": text, "arch_ids": []})
        group["count"] += 1
        if len(group["arch_ids"]) < FAILURE_EXAMPLES:
            group["arch_ids"].append(arch_id)
    return sorted(groups.values(), key=lambda g: (-g["count"], g["arch_ids"][0]))


def failures_text(groups: List[dict]) -> str:
    """The failed trials' reasons, one line each (empty when none failed)."""
    if not groups:
        return ""
    total = sum(g["count"] for g in groups)
    lines = [f"{total} trial{'s' if total != 1 else ''} failed or diverged, by reason:"]
    for g in groups:
        ids = ", ".join(f"#{i}" for i in g["arch_ids"]) + (", ..." if g["count"] > len(g["arch_ids"]) else "")
        lines.append(f"  {g['count']:>4} {g['kind']}: {g['example'][:200]} ({ids})")
    return "\n".join(lines)


def counts_of(recs: List[dict]) -> dict:
    out: dict = {}
    for r in recs:
        out[str(r["status"])] = out.get(str(r["status"]), 0) + 1
    return dict(sorted(out.items()))


def repair_of(rec: dict) -> Optional[dict]:
    """The compiler's repair recorded with an LLM's proposal (`change["repair"]`, `--repair auto`), if any."""
    repair = (rec.get("change") or {}).get("repair")
    return repair if isinstance(repair, dict) else None


def repair_note(rec: dict) -> Optional[str]:
    """`repaired by the compiler (NAD207, NAD301)` for a repaired proposal, else None."""
    repair = repair_of(rec)
    if repair is None:
        return None
    codes = [str(c) for c in repair.get("fixed") or []]
    return REPAIRED + (f" ({', '.join(codes)})" if codes else "")


def proposal_counts(recs: List[dict]) -> Optional[dict]:
    """The LLM's proposals: valid as written, valid after the compiler's repair, invalid (None
    when the run has no LLM proposal). A proposal is valid when its block verified (trained,
    duplicate or over budget alike)."""
    llm = [r for r in recs if r.get("origin") == "llm"]
    if not llm:
        return None
    invalid = sum(r["status"] == "invalid" for r in llm)
    repaired = sum(r["status"] != "invalid" and repair_of(r) is not None for r in llm)
    return {"valid_as_written": len(llm) - invalid - repaired, "valid_after_repair": repaired, "invalid": invalid}


def proposals_line(counts_: Optional[dict]) -> Optional[str]:
    if counts_ is None:
        return None
    return (f"LLM proposals: {counts_['valid_as_written']} valid as written, {counts_['valid_after_repair']} valid "
            f"after repair ({REPAIRED}), {counts_['invalid']} invalid")


def objective_text(v) -> str:
    """An objective's value by its magnitude: a count as 615.39K, anything else to 4 significant
    digits (a `params` objective a Python function returns in millions reads 0.6154, not 0)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if float(v).is_integer() and abs(v) >= 1000:
        return human(int(v))
    return format(float(v), ".4g")


def number_text(v, spec: str) -> str:
    """`v` formatted by `spec`, or `-` when it is missing."""
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
    return " ".join(f"{number_text(r['valid_acc'], '.2f') if r['valid_acc'] is not None else r['status']}@{r['epochs']}ep"
                    + (" ^" if r["promoted"] else "") for r in rec.get("rungs", []))


def status_table(recs: List[dict]) -> str:
    head = ["arch", "status", "change", "params", "flops", "valid", "test", "seconds"]
    laddered = any(r.get("rungs") for r in recs)
    rows = []
    for r in tree_order(recs):
        change = _change(r)[:32] + (" *" if repair_of(r) else "")
        rows.append(["  " * r["depth"] + f"#{r['arch_id']}", r["status"], change, human(r["params"]),
                     human(r["flops"]), number_text(r["valid_acc"], ".2f"), number_text(r["test_acc"], ".2f"),
                     number_text(r["seconds"], ".1f")] + ([rungs_text(r)] if laddered else []))
    head += ["rungs (^ promoted)"] if laddered else []
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    align = [str.ljust, str.ljust, str.ljust] + [str.rjust] * 5 + [str.ljust]
    lines = ["  ".join(a(h, w) for a, h, w in zip(align, head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(a(c, w) for a, c, w in zip(align, row, widths)).rstrip() for row in rows]
    if any(repair_of(r) for r in recs):
        lines.append(f"* {REPAIRED}: the LLM's block did not verify (`export` holds it, the diff and the codes fixed)")
    return "\n".join(lines)


def summary_line(counts_: dict) -> str:
    trained = sum(counts_.get(s, 0) for s in ("ok", "pruned", "diverged", "failed", "training", "proposed",
                                              "interrupted"))
    rest = ", ".join(f"{n} {s}" for s, n in sorted(counts_.items()) if n)
    return f"{sum(counts_.values())} architectures, {trained} trials ({rest})"


def lineage(rec: dict) -> str:
    """`parent #3, insert-se` for a child; `root` for the root, which has no parent."""
    text = _change(rec) if rec["parent_id"] is None else f"parent #{rec['parent_id']}, {_change(rec)}"
    return text + (f", {REPAIRED}" if repair_of(rec) else "")


def best_text(rec: dict) -> str:
    """The best architecture's text with a comment header (valid .nad, ready for nadc)."""
    head = (f"# nader-search best: arch #{rec['arch_id']} ({lineage(rec)}), "
            f"valid {number_text(rec['valid_acc'], '.2f')}%, test {number_text(rec['test_acc'], '.2f')}%, "
            f"{human(rec['params'])} params, {human(rec['flops'])} FLOPs, widths {rec['widths']}\n")
    return head + (rec["text"] or "").rstrip("\n") + "\n"


EXPORT_FIELDS = list(COLUMNS) + ["change", "diagnostics", "prescreen", "seeds", "text", "repair", "objectives",
                                 "user_attrs"]


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
