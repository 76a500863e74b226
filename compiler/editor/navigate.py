"""Node ids as names: where one is defined, where edges use it, renaming it; blocks as symbols."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from nader.dsl.ir import Block, NodeId, node_id
from nader.dsl.limits import InputLimits, long_digits
from nader.dsl.span import Span

from .analysis import Analysis

#: What a node id may be written as (dsl/ir.py `NodeId`): digits, or letters, digits and `_`.
ID_TEXT = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Symbol:
    """A block or a node, for an editor's outline."""

    name: str
    detail: str
    kind: str  # "block" or "node"
    span: Span  # all of it
    selection: Span  # its name
    children: tuple["Symbol", ...] = ()


def id_at(analysis: Analysis, line: int, col: int) -> Optional[tuple[Block, NodeId]]:
    """The node id written at (line, col), in a node's definition or an edge, with its block."""
    block, node, edge = analysis.item_at(line)
    if node is not None and node.id_span.col <= col <= node.id_span.end_col:
        return block, node.id
    if edge is not None:
        for index, cols in enumerate(edge.source_spans):
            if cols.col <= col <= cols.end_col:
                return block, edge.sources[index]
        if edge.target_span.col <= col <= edge.target_span.end_col:
            return block, edge.target
    return None


def _definitions(block: Block, wanted: NodeId) -> list[Span]:
    return [Span.on_line(n.span.line, n.id_span) for n in block.nodes if n.id == wanted]


def _uses(block: Block, wanted: NodeId) -> list[Span]:
    found = []
    for e in block.edges:
        found.extend(e.source_span(k) for k, s in enumerate(e.sources) if s == wanted)
        if e.target == wanted:
            found.append(Span.on_line(e.span.line, e.target_span))
    return found


def definition(analysis: Analysis, line: int, col: int) -> list[Span]:
    """Where the node id under the cursor is defined (more than one place when it is defined twice)."""
    found = id_at(analysis, line, col)
    return _definitions(*found) if found else []


def references(analysis: Analysis, line: int, col: int, include_declaration: bool = True) -> list[Span]:
    """Every place of its block where the node id under the cursor is written."""
    found = id_at(analysis, line, col)
    if not found:
        return []
    spans = (_definitions(*found) if include_declaration else []) + _uses(*found)
    return sorted(spans)


class RenameRefused(ValueError):
    """A rename that cannot be made, and why (for the person who asked)."""


def _shown(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:40] + "...")


def check_node_id(name: str, limits: InputLimits) -> None:
    """RenameRefused unless `name` is a node id the parser reads under `limits`: letters, digits
    and `_`, no run of digits longer than `digits-per-number` (NAD120), no longer than a line."""
    if len(name) > limits.line_length:
        raise RenameRefused(f"a node id of {len(name):,} characters is longer than a line may be "
                            f"({limits.line_length:,}, NAD121)")
    if not ID_TEXT.fullmatch(name):
        raise RenameRefused(f"{_shown(name)} is not a node id (letters, digits and `_`)")
    if long_digits(limits.digits_per_number).search(name):
        raise RenameRefused(f"{_shown(name)} has a run of more than {limits.digits_per_number} digits (NAD120)")


def rename_edits(analysis: Analysis, line: int, col: int, new_name: str) -> list[tuple[Span, str]]:
    """The edits that rename the node id under the cursor across its block. Raises RenameRefused
    when there is no id there, `new_name` is not a node id (`check_node_id`), another node of the
    block has it already, or a line would grow past the line limit."""
    found = id_at(analysis, line, col)
    if not found:
        raise RenameRefused("no node id here to rename")
    limits = analysis.limits
    check_node_id(new_name, limits)
    block, old = found
    new = node_id(new_name)
    if new != old and any(n.id == new for n in block.nodes):
        raise RenameRefused(f"block `{block.name}` has a node `{new}` already")
    spans = references(analysis, line, col)
    lines = analysis.lines
    for span in spans:
        if len(lines[span.line - 1]) - (span.end_col - span.col) + len(new_name) > limits.line_length:
            raise RenameRefused(f"line {span.line} would be longer than {limits.line_length:,} characters (NAD121)")
    return [(span, new_name) for span in spans]


def symbols(analysis: Analysis) -> list[Symbol]:
    """The blocks of the file, each with its nodes."""
    out = []
    for block in analysis.parsed.program.blocks:
        report = analysis.report_of(block)
        nodes = tuple(Symbol(str(n.id), n.source_text().split(":", 1)[1], "node", n.span,
                             Span.on_line(n.span.line, n.id_span)) for n in block.nodes)
        role = str(report.role) if report else str(block.inferred_role())
        out.append(Symbol(block.name, role, "block", _block_span(analysis, block), block.header_span, nodes))
    return out


def _block_span(analysis: Analysis, block: Block) -> Span:
    last = max([block.header_span.line] + [i.span.line for i in (*block.nodes, *block.edges)])
    return Span(block.header_span.line, 1, last, len(analysis.lines[last - 1]) + 1)


def folding_ranges(analysis: Analysis) -> list[tuple[int, int]]:
    """(first line, last line) of each block that spans more than its header."""
    spans = (_block_span(analysis, b) for b in analysis.parsed.program.blocks)
    return [(s.line, s.end_line) for s in spans if s.end_line > s.line]
