"""Render a search as one self-contained HTML file (inline CSS, JS and SVG; no other host).

The page is a jinja2 template with autoescaping. The architectures travel to the page's script
as one JSON document inside `<script type="application/json">`, written by jinja2's `tojson`
(which escapes `<`, `>`, `&` and `'`), and the script puts every untrusted string into the page
with `textContent`, never as markup. Block drawings come from the compiler's own SVG backend and
are shown as `<img>` data URLs, in which a browser never runs scripts.

Should escaping ever fail, the page's Content-Security-Policy still stops injected markup: it
names the sha256 of each inline script and style we write, so nothing else inline runs (no
other `<script>`, no `on...=` handler, no `style=` attribute), and nothing loads from anywhere.
Hashes rather than a nonce: a written file holds its nonce for anyone to read, and the same
run renders to the same policy.
"""
from __future__ import annotations

import base64
import collections
import hashlib
import json
import time
from importlib import resources
from typing import Iterable, Optional

import jinja2

from nader.compiler.backends.svg import block_svg
from nader.compiler.passes.diff import block_diff, pair_blocks, render_text
from nader.compiler.reply_repair import REPAIRED
from nader.compiler.passes.verify import verify_block
from nader.dsl.parser import parse

from nader.runtime.errors import ConfigError

from ..objectives import pareto_set, parse_objectives, value
from ..trial_network import PYTHON, evaluator_kind
from .model import FAILED_STATUSES, ReportArch, Run

TOP_N = 10


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("nader.search.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["json_text"] = json_text
    return env


def json_text(value) -> str:
    """A value as JSON to read on the page: `tojson` is for a script's data (it writes `->` as
    `-\\u003e`); this is plain JSON text, which autoescaping then makes safe HTML (`-&gt;`)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _static(name: str) -> str:
    return resources.files("nader.search.report").joinpath("static", name).read_text(encoding="utf-8")


def _source_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(scripts: Iterable[str] = (), styles: Iterable[str] = (), images: bool = False) -> str:
    """The policy for a page whose only inline scripts and `<style>` elements hold exactly these
    texts (the page writes them verbatim): those run, nothing else inline does, nothing is fetched."""
    parts = ["default-src 'none'"]
    for directive, texts in (("script-src", scripts), ("style-src", styles)):
        hashes = sorted({_source_hash(t) for t in texts})
        if hashes:  # 'report-sample': a violation names the start of what it blocked (tests read it)
            parts.append(f"{directive} {' '.join(hashes)} 'report-sample'")
    if images:
        parts.append("img-src data:")
    parts += ["base-uri 'none'", "form-action 'none'"]  # not covered by default-src
    return "; ".join(parts)


def pareto_ids(points: Iterable[tuple[str, float, float]]) -> list[str]:
    """Ids of the points no other point beats: higher accuracy at no greater cost, ordered by cost."""
    best = float("-inf")
    front = []
    for ident, cost, acc in sorted(points, key=lambda p: (p[1], -p[2])):
        if acc > best:
            front.append(ident)
            best = acc
    return front


def objective_front(run: Run, archs: list[ReportArch]) -> Optional[dict]:
    """A search with several objectives: every trained architecture at its first two objectives,
    and the Pareto set over all of them (`nader.search.objectives`, pymoo's sorting); None for
    one objective (the accuracy plots above show it)."""
    spec = (run.config or {}).get("objectives")
    if not isinstance(spec, list) or len(spec) < 2:
        return None
    try:
        objectives = parse_objectives(spec)
    except ConfigError:
        return None
    recs = [{"arch_id": a.id, "status": a.status, "valid_acc": a.valid_acc, "params": a.params, "flops": a.flops,
             "objectives": a.objectives} for a in archs if a.status == "ok"]
    x, y = objectives[0], objectives[1]
    points = [{"id": r["arch_id"], "x": value(r, x.name), "y": value(r, y.name)} for r in recs]
    try:
        front = [r["arch_id"] for r in pareto_set(recs, objectives)]
    except ConfigError:  # pymoo missing where the report is drawn: the points without the front
        front = []
    return {"x": str(x), "y": str(y), "all": [str(o) for o in objectives],
            "points": [p for p in points if p["x"] is not None and p["y"] is not None], "front": front}


def simulated_time(run: Run) -> bool:
    """Whether the run's trials were answered from a tabular benchmark: its time axis is then the
    simulated training time the table reports, summed over the trials in finishing order (a Python
    objective's or a registered evaluator's trials take wall time)."""
    return evaluator_kind(run.config or {}) == "table"


def _best_so_far(archs: list[ReportArch], start: Optional[float], simulated: bool = False) -> list[dict]:
    """One point per finished trial, in finishing order: the best validation accuracy so far, at
    the wall time it finished or, for a tabular run, the simulated training time spent by then
    (every evaluated architecture's, failed ones included)."""
    order = sorted((a for a in archs if a.finished is not None), key=lambda a: (a.finished, int(a.id)
                                                                                   if a.id.isdigit() else 0))
    done = [a for a in order if a.trained]
    best, out = None, []
    t0 = start if start is not None else (min(a.created or a.finished for a in done) if done else 0.0)
    spent, index = 0.0, 0
    for a in order:
        spent += a.seconds or 0.0
        if not a.trained:
            continue
        index += 1
        if best is None or a.rank_key() < best.rank_key():
            best = a
        out.append({"trial": index, "seconds": round(spent if simulated else a.finished - t0, 3),
                    "valid": best.valid_acc, "id": best.id})
    return out


def _drawings(text: str) -> list[str]:
    """Data URLs of the SVG drawings of an architecture's blocks (empty when it does not parse)."""
    try:
        blocks = parse(text).program.blocks
        svgs = [block_svg(verify_block(b, stem_stride=None)) for b in blocks]  # stems as networks build them
    except Exception:  # a drawing is an extra: a block that cannot be drawn is shown as text only
        return []
    return ["data:image/svg+xml;base64," + base64.b64encode(s.encode("utf-8")).decode("ascii") for s in svgs]


def _diff(parent: Optional[ReportArch], arch: ReportArch) -> str:
    if parent is None or not parent.text:
        return ""
    try:
        pairs, _, _ = pair_blocks(parse(parent.text).program.blocks, parse(arch.text).program.blocks)
        parts = [render_text(block_diff(a, b), f"#{parent.id}", f"#{arch.id}") for a, b in pairs]
    except Exception:  # as above: the diff is an extra
        return ""
    return "\n".join(p for p in parts if p.strip())


def _failures(archs: list[ReportArch]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    codes = collections.Counter()
    kinds = collections.Counter()
    for a in archs:
        if a.status == "invalid":
            for code in {d.get("code", "?") for d in a.diagnostics if d.get("severity", "error") == "error"}:
                codes[code] += 1
        elif a.status in ("failed", "diverged"):
            kinds[a.error_kind or a.status] += 1
        elif a.status == "over-budget":
            kinds["over budget"] += 1
    return codes.most_common(), kinds.most_common()


def _arch_json(a: ReportArch) -> dict:
    return {"id": a.id, "parent": a.parent, "status": a.status, "text": a.text, "change": a.change,
            "valid": a.valid_acc, "test": a.test_acc, "params": a.params, "flops": a.flops,
            "diagnostics": a.diagnostics, "error": a.error, "error_kind": a.error_kind,
            "duplicate_of": a.duplicate_of, "seconds": a.seconds, "tokens": a.tokens, "cost": a.cost,
            "llm_rounds": a.llm_rounds, **({"rungs": a.rungs} if a.rungs else {}),
            **({"repaired": REPAIRED} if a.repair else {})}


def promotions(archs: list[ReportArch]) -> dict:
    """The multi-fidelity table: the rungs' budgets and, per architecture that entered one, its
    validation accuracy at each rung and whether it was promoted from it (highest rung first)."""
    laddered = [a for a in archs if a.rungs]
    epochs = sorted({r["rung"]: r["epochs"] for a in laddered for r in a.rungs}.items())
    rows = []
    for a in sorted(laddered, key=lambda a: (*a.rank_key(), int(a.id) if a.id.isdigit() else 0)):
        at = {r["rung"]: r for r in a.rungs}
        rows.append({"id": a.id, "cells": [at.get(rung) for rung, _ in epochs]})
    return {"epochs": [e for _, e in epochs], "rows": rows}


def proposals(archs: list[ReportArch]) -> Optional[dict]:
    """The LLM's proposals: valid as written, valid after the compiler's repair, invalid; and the
    repaired ones with their fixes (None when the run has no LLM proposal)."""
    llm = [a for a in archs if a.origin == "llm"]
    if not llm:
        return None
    repaired = [a for a in llm if a.status != "invalid" and a.repair is not None]
    invalid = sum(a.status == "invalid" for a in llm)
    codes = collections.Counter(c for a in repaired for c in a.repair.get("fixed") or [])
    return {"valid_as_written": len(llm) - invalid - len(repaired), "valid_after_repair": len(repaired),
            "invalid": invalid, "codes": codes.most_common(), "repaired": repaired}


def run_summary(run: Run, archs: list[ReportArch]) -> dict:
    trained = [a for a in archs if a.trained]
    best = min(trained, key=lambda a: a.rank_key(), default=None)
    times = [t for a in archs for t in (a.created, a.finished) if t is not None]
    start = run.started if run.started is not None else (min(times) if times else None)
    return {
        "statuses": collections.Counter(a.status for a in archs).most_common(),
        "total": len(archs),
        "best": best,
        "elapsed": (max(times) - start) if times and start is not None else None,
        "tokens": sum(a.tokens for a in archs),
        "cost": sum(a.cost for a in archs),
        "failed": sum(a.status in FAILED_STATUSES for a in archs),
    }


def render_report(run: Run, archs: list[ReportArch], *, top_n: int = TOP_N, generated: Optional[float] = None) -> str:
    """The report's HTML text."""
    by_id = {a.id: a for a in archs}
    trained = sorted((a for a in archs if a.trained), key=lambda a: a.rank_key())
    top = [{"arch": a, "rank": k, "drawings": _drawings(a.text), "diff": _diff(by_id.get(a.parent), a)}
           for k, a in enumerate(trained[:top_n], 1)]
    facts = run_summary(run, archs)
    data = {
        "archs": [_arch_json(a) for a in archs],
        "best_so_far": _best_so_far(archs, run.started, simulated_time(run)),
        "pareto_params": pareto_ids((a.id, a.params, a.valid_acc) for a in trained if a.params is not None),
        "pareto_flops": pareto_ids((a.id, a.flops, a.valid_acc) for a in trained if a.flops is not None),
        "objectives": objective_front(run, archs),
    }
    codes, kinds = _failures(archs)
    css, d3, script = _static("report.css"), _static("d3.min.js"), _static("report.js")
    return _env().get_template("report.html.j2").render(
        run=run, facts=facts, top=top, codes=codes, kinds=kinds, data=data, simulated=simulated_time(run),
        objective_evaluates=evaluator_kind(run.config or {}) == PYTHON, promotions=promotions(archs),
        proposals=proposals(archs), repaired_label=REPAIRED,
        generated=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(generated or time.time())),
        css=css, d3=d3, script=script, csp=content_security_policy([d3, script], [css], images=True))


def data_json(run: Run, archs: list[ReportArch]) -> str:
    """The data the page's script reads, as JSON (for tests and for tools)."""
    return json.dumps({"archs": [_arch_json(a) for a in archs]}, sort_keys=True)
