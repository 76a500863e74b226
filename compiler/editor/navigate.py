"""Node ids as names: where one is defined, where edges use it, renaming it; blocks as symbols."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from nader.dsl.ir import Block, NodeId, node_id
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


def rename_edits(analysis: Analysis, line: int, col: int, new_name: str) -> list[tuple[Span, str]]:
    """The edits that rename the node id under the cursor across its block. Raises ValueError when
    `new_name` is not an id, or another node of the block has it already."""
    found = id_at(analysis, line, col)
    if not found:
        raise ValueError("no node id here to rename")
    if not ID_TEXT.fullmatch(new_name):
        raise ValueError(f"`{new_name}` is not a node id (letters, digits and `_`)")
    block, old = found
    new = node_id(new_name)
    if new != old and any(n.id == new for n in block.nodes):
        raise ValueError(f"block `{block.name}` has a node `{new}` already")
    return [(span, new_name) for span in references(analysis, line, col)]


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
