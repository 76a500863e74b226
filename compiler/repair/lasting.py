"""The errors a candidate fix provably leaves in its block, known from its change without verifying it.

`nadc verify`'s suggestions verify every candidate for an error and keep the best (suggest.py). Most
blocks searched have errors besides the one searched, and most candidates leave those where they are:
a line the change does not write keeps the front end's errors about it (each line is read alone), a node
line it does not write keeps its parameter problems, a node whose incoming edges it does not change keeps
its wrong number of inputs, an edge line it does not write keeps its undefined ids unless the change
defines them, and a dead node stays dead unless a wire the change writes leaves a dead node (or it adds an
output). These lasting errors bound the candidate's progress from below (search.py's
`block_progress`: each of its parts is at least theirs, and with one error left no shapes are inferred).
A candidate whose bound already ranks it behind the best one found so far cannot win, so it is not
verified; which fix an error gets does not change (tests/test_repair_lasting.py checks the bound against
the verifier on every candidate of the corpora and of mutated blocks).
"""
from __future__ import annotations

from typing import Optional

from nader.dsl.parse_codes import (INVALID_ARROW, INVALID_ID, INVALID_SYNTAX, MARKDOWN_FENCE, MISPLACED_POSITIONAL,
                                   MISSING_COLON, OPERATION_ALIAS, UNCLOSED_PAREN, UNKNOWN_OPERATION, UNKNOWN_PARAMETER,
                                   DUPLICATE_PARAMETER, UNKNOWN_SYMBOL)

from nader.dsl.ops import Group, lookup

from ..passes.structure import dead_nodes, graph_facts
from ..passes.structure_codes import ILL_TYPED_PARAMETER, MISSING_PARAMETER, SPATIAL_IN_LAYER
from ..passes.verify import BlockReport
from .edit import Change
from .search import HIDING

#: Diagnostics about one line alone: the front end's on a line it reads by itself, and the parameter checks
#: of one node line. Not those of the input limits or of headers, which depend on the rest of the text.
LINE_CODES = frozenset(c.code for c in (INVALID_SYNTAX, INVALID_ARROW, UNCLOSED_PAREN, UNKNOWN_OPERATION,
                                        UNKNOWN_PARAMETER, DUPLICATE_PARAMETER, MISPLACED_POSITIONAL, MARKDOWN_FENCE,
                                        UNKNOWN_SYMBOL, INVALID_ID, MISSING_COLON, OPERATION_ALIAS,
                                        MISSING_PARAMETER, ILL_TYPED_PARAMETER, SPATIAL_IN_LAYER))
SOURCES, SINKS = Group.SOURCE, Group.SINK


class LastingErrors:
    """What of a failing block's report a change may leave: its errors and warnings about single lines, its
    nodes with a wrong number of inputs and its edges' undefined ids, gathered once per block."""

    def __init__(self, report: BlockReport):
        block = self.block = report.block
        facts = graph_facts(block)
        # with an id defined twice, which node an edge feeds depends on which definition goes first
        self.usable = facts.unique_ids
        self.lines: list[tuple[int, bool, bool]] = []  # (line, an error, one that hides its line's checks)
        for d in report.diagnostics:
            if d.code.code in LINE_CODES:
                self.lines.append((d.span.line, d.is_error, d.code.code in HIDING))
        defined = facts.nodes
        # (line, node id) of each node with a wrong number of inputs (NAD207)
        self.arity = [(defined[i].span.line, i) for i in facts.misfits]
        self.undefined = [(e.span.line, i) for e in block.edges for i in (*e.sources, e.target) if i not in defined]
        self.node_lines = frozenset(n.span.line for n in block.nodes)
        self.dead = frozenset(dead_nodes(block))
        # (line, an input) of each dead node: NAD206 warns once per dead input, once for the computed ones
        self.dead_lines = [(defined[i].span.line, defined[i].op in SOURCES) for i in self.dead]
        self.output_lines = frozenset(n.span.line for n in block.nodes if n.op in SINKS)
        self.named = {i for e in block.edges for i in (*e.sources, e.target)} if self.dead else frozenset()

    def bound(self, change: Change) -> Optional[tuple[int, int, int, int]]:
        """(hiding errors, errors, warnings, nodes) the block with `change` has at least (its nodes: exactly);
        None where unknown."""
        if not self.usable or change.block is not self.block:
            return None
        written = change.node_lines.keys() | change.edge_rows.keys()
        hidden = errors = warnings = 0
        for line, error, hides in self.lines:
            if line not in written:
                if error:
                    errors += 1
                    hidden += hides
                else:
                    warnings += 1
        if self.arity:
            fed = change.rewired()
            errors += sum(line not in written and node not in fed for line, node in self.arity)
        if self.undefined:
            new = {node_id for node_id, _ in change.new_nodes}
            errors += sum(line not in written and node not in new for line, node in self.undefined)
        if self.dead_lines and self._keeps_dead(change, written):
            dead = [source for line, source in self.dead_lines if line not in written]
            warnings += sum(dead) + (not all(dead))
        deleted = sum(text is None and line in self.node_lines for line, text in change.node_lines.items())
        return hidden, errors, warnings, len(self.block.nodes) - deleted + len(change.new_nodes)

    def _keeps_dead(self, change: Change, written) -> bool:
        """Whether every dead node the change does not write stays dead: a path from one to an output would
        need a wire it writes from a dead node, an output it adds, or a wire to an id it newly defines."""
        if written & self.output_lines or any(_is_output(op) for _, op in change.new_nodes) or \
                any(_is_output(op) for op, _, _ in change.node_ops.values()):
            return False
        if any(node_id in self.named for node_id, _ in change.new_nodes):
            return False
        dead = self.dead
        return not any(s in dead for sources, _ in change.new_edges for s in sources) and \
            not any(s in dead for rows in change.edge_rows.values() for sources, _ in rows for s in sources)


def _is_output(op_text: str) -> bool:
    found = lookup(op_text.split("(", 1)[0].strip())
    return found is not None and found.op in SINKS
