"""Hover text: an operation's documentation and a node's inferred symbolic shape; on an edge, the
shapes flowing through it; on a diagnostic, its code's explanation."""
from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

from nader import __version__
from nader.compiler.codes import code_table
from nader.compiler.passes import BlockReport
from nader.compiler.passes.shape_types import shape_str
from nader.dsl.diagnostics import Diagnostic
from nader.dsl.ir import Block, Edge, Node, bound_param_text
from nader.dsl.ops import OpDef
from nader.dsl.span import Span

from .analysis import Analysis


def op_doc(d: OpDef) -> str:
    """Markdown for an operation: signature, inputs, summary and parameters."""
    lines = [f"**{d.name}**`({', '.join(p.signature() for p in d.params)})` — {d.arity.describe()}", "", d.summary]
    if d.params:
        lines += ["", "| parameter | kind | default |", "|---|---|---|"]
        for p in d.params:
            default = "required" if p.required else (p.default_from if p.default_from else p.default)
            lines.append(f"| `{p.name}` | {p.kind.value} | {'variadic' if p.variadic else default} |")
    if d.aliases:
        lines += ["", "Also spelled: " + ", ".join(f"`{a}`" for a in d.aliases)]
    return "\n".join(lines)


def _shape(report: Optional[BlockReport], node_id) -> Optional[str]:
    if report is None or report.shapes is None:
        return None
    shape = report.shapes.shapes.get(node_id)
    return shape_str(shape) if shape is not None else None


def _constraints(report: Optional[BlockReport]) -> list[str]:
    return [f"- `{c}`" for c in report.constraints] if report else []


def _node_hover(block: Block, node: Node, report: Optional[BlockReport]) -> str:
    parts = [f"node `{node.id}` of `{block.name}`"]
    shape = _shape(report, node.id)
    if shape:
        parts.append(f"shape: `{shape}`")
    elif report is not None and report.shapes is not None:
        parts.append("shape: none (the node does not reach the output)")
    params = bound_param_text(node)
    if params:
        parts.append(f"parameters, defaults filled in: `{params}`")
    constraints = _constraints(report)
    if constraints:
        parts.append("the block needs:\n" + "\n".join(constraints))
    if node.opdef is not None:
        parts.append(op_doc(node.opdef))
    else:
        parts.append(f"`{node.op_name}` is not an operation of the registry (`nadc explain ops` lists them)")
    return "\n\n".join(p for p in parts if p)


def _edge_hover(block: Block, edge: Edge, report: Optional[BlockReport]) -> str:
    rows = []
    for source in edge.sources:
        rows.append(f"- `{source}` → `{edge.target}`: `{_shape(report, source) or '?'}`")
    out = _shape(report, edge.target)
    text = f"edge into `{edge.target}` of `{block.name}`\n\n" + "\n".join(rows)
    return text + (f"\n\n`{edge.target}` gives `{out}`" if out else "")


def _diagnostic_text(d: Diagnostic) -> str:
    fix = ""
    if d.fix is not None:
        what = f": {d.fix.message}" if d.fix.message else ""
        fix = f"\n\nfix `{d.fix.kind}` ({d.fix.safety}){what} — offered as a quick fix"
    head = f"**{d.code.code}** ({d.code.name}, {d.level}): {d.message}"
    return head + (f"\n\nhelp: {d.help}" if d.help else "") + fix + f"\n\n{d.code.summary} (`nadc explain {d.code.code}`)"


def _covers(span: Span, line: int, col: int) -> bool:
    if span.line == 0:
        return False
    return (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col)


def hover(analysis: Analysis, line: int, col: int) -> Optional[tuple[str, Span]]:
    """Markdown for the position (line, col) and the range it is about, or None."""
    block, node, edge = analysis.item_at(line)
    notes = [_diagnostic_text(d) for d in analysis.diagnostics if _covers(d.span, line, col)]
    text, span = None, None
    if node is not None:
        text, span = _node_hover(block, node, analysis.report_of(block)), node.span
    elif edge is not None:
        text, span = _edge_hover(block, edge, analysis.report_of(block)), edge.span
    elif block is not None and block.header_span.line == line:
        report = analysis.report_of(block)
        verdict = "verifies" if report and report.ok else "does not verify"
        role = report.role if report else block.inferred_role()
        text = "\n\n".join([f"block `{block.name}` ({role}): {verdict}"] + (
            ["needs:\n" + "\n".join(_constraints(report))] if report and report.constraints else []))
        span = block.header_span
    if notes:
        text = "\n\n---\n\n".join(notes + ([text] if text else []))  # the problem first
        span = span or next(d.span for d in analysis.diagnostics if _covers(d.span, line, col))
    return (text, span) if text else None


@lru_cache(maxsize=None)
def explain_file(code: str) -> Optional[str]:
    """The URI of a Markdown file holding the code's `nadc explain` text, written to the temporary
    folder the first time (an editor links a diagnostic's code to it); None when it cannot be."""
    entry = code_table().get(code)
    if entry is None:
        return None
    folder = Path(tempfile.gettempdir()) / f"nadc-explain-{__version__}"
    try:
        folder.mkdir(exist_ok=True)
        target = folder / f"{code}.md"
        target.write_text(entry.explain(), encoding="utf-8")
    except OSError:
        return None
    return target.as_uri()
