"""What a fix kind sees: the block, its verification report (role, shapes) and graph helpers."""
from __future__ import annotations

import re
from collections import deque
from typing import Mapping, Optional, Sequence

from nader.dsl.diagnostics import Diagnostic
from nader.dsl.ir import Block, Node, NodeId
from nader.dsl.ops import Op

from ..passes.contract import contract
from ..passes.structure import dead_nodes
from ..passes.verify import BlockReport
from .edit import BlockEditor

#: Warnings the repair answers too (search.py's progress counts them): where it can, after the errors; a block
#: that keeps one still counts as repaired. NAD318: valid, but not at the widths NAS-Bench-201's (NADER's)
#: network builds it at. Here, below the search, so that a kind may ask (`kinds/_common.cannot_meet`).
TARGET_WARNINGS = frozenset({"NAD318"})


class RepairContext:
    """One failing block of a file, as its fix kinds see it (a plain class: made once per error searched).

    `progress_only`: the caller keeps only candidates that get the verifier further (`nadc verify`'s
    suggestions), so a kind may leave out one it can prove does not (`_common.cannot_meet`); the repair
    loop also tries those that keep it as far, for its lookahead."""

    __slots__ = ("lines", "report", "block", "progress_only", "_nodes", "_inputs", "_consumers", "_node_lines")

    def __init__(self, lines: Sequence[str], report: BlockReport, progress_only: bool = False):
        self.lines = lines  # the whole file, split at `\n`
        self.report = report
        block = self.block = report.block
        self.progress_only = progress_only
        # The block's maps, held here: the kinds read them thousands of times (each a lookup, not a call chain).
        self._nodes, self._inputs = block.node_map(), block.input_map()
        self._consumers: Optional[Mapping] = None  # made by the block when first asked: most kinds do not
        self._node_lines: Optional[dict] = None

    def memo(self, key: str, compute):
        """`compute(self)`, once per block (the kinds ask again for each error and candidate)."""
        return self.block.analysis(key, lambda block: compute(self))

    def editor(self) -> BlockEditor:
        return BlockEditor(self.block, self.lines)

    def node_at(self, diagnostic: Diagnostic) -> Optional[Node]:
        """The node whose line the diagnostic points at, if any."""
        found = self._node_lines
        if found is None:
            found = self._node_lines = self.block.analysis("repair.node_lines", _node_lines)
        return found.get(diagnostic.span.line)

    def node(self, node_id: NodeId) -> Optional[Node]:
        return self._nodes.get(node_id)

    def op(self, node_id: NodeId) -> Optional[Op]:
        node = self.node(node_id)
        return node.op if node is not None else None

    # -- shapes --------------------------------------------------------------------------------
    def shape(self, node_id: NodeId) -> Optional[tuple]:
        shapes = self.report.shapes
        return shapes.shapes.get(node_id) if shapes is not None else None

    def channels(self, node_id: NodeId) -> Optional[str]:
        """The channel count of a 4-d (B,C,H,W) result, as the language writes it (a fix writes it in a
        parameter); None when unknown or when it has no such spelling (`ceil(C/2)`)."""
        shape = self.shape(node_id)
        return written(str(shape[1])) if shape is not None and len(shape) == 4 else None

    def output_shape(self) -> tuple:
        """The shape the role's contract wants out of the block."""
        return contract(self.report.role, self.report.stem_stride or 1, self.report.domain).output

    def output_channels(self) -> str:
        """How a layer writes the contract's output channels: `C`, or `dim` where they differ."""
        out = self.output_shape()[1]
        return "C" if str(out) == "C" else "dim"

    # -- graph ---------------------------------------------------------------------------------
    # The block's own lists (not copies: the kinds ask often, and only read them), not to be changed.
    def inputs(self, node_id: NodeId) -> Sequence[NodeId]:
        return self._inputs.get(node_id, ())

    def consumers(self, node_id: NodeId) -> Sequence[NodeId]:
        return self._consumer_map().get(node_id, ())

    def _consumer_map(self) -> Mapping:
        found = self._consumers
        if found is None:
            found = self._consumers = self.block.consumer_map()
        return found

    # The walks are memoised on the block (a repair asks them again for each error and candidate): lists
    # shared by every caller, not to be changed.
    def ancestors(self, node_id: NodeId) -> list[NodeId]:
        """Nodes with a path to `node_id`, nearest first (breadth-first, operand order)."""
        return self._walk("repair.ancestors", node_id, False)

    def descendants(self, node_id: NodeId) -> list[NodeId]:
        return self._walk("repair.descendants", node_id, True)

    def _walk(self, key: str, start: NodeId, down: bool) -> list[NodeId]:
        walks = self.block.analysis(key, _new_table)
        found = walks.get(start)
        if found is None:
            found = walks[start] = _walk(start, self._consumer_map() if down else self._inputs)
        return found

    def dead(self) -> frozenset:
        return self.block.analysis("repair.dead", _dead)

    def output_node(self) -> Optional[Node]:
        return next((n for n in self.block.nodes if n.op is Op.OUTPUT), None)


def _node_lines(block: Block) -> dict[int, Node]:
    """The first node on each line (the last written wins: read backwards)."""
    return {node.span.line: node for node in reversed(block.nodes)}


def _new_table(block: Block) -> dict:
    return {}


def _dead(block: Block) -> frozenset:
    return frozenset(dead_nodes(block))


def _walk(start: NodeId, step: Mapping[NodeId, list[NodeId]]) -> list[NodeId]:
    """The nodes `step` reaches from `start`, breadth-first, in the order of its lists."""
    seen = {start}
    order = []
    queue = deque([start])
    while queue:
        for nxt in step.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
                queue.append(nxt)
    return order


_FLOOR = re.compile(r"floor\(([^()]+)/(\d+)\)")


def written(size: str) -> Optional[str]:
    """A size shape inference printed (`floor(C/4)`, `3*C/2`) as an expression of the language (`C//4`),
    or None where it has no such spelling (`ceil(...)`): writing `floor(C/4)` into a parameter made
    a line that does not parse."""
    whole = _FLOOR.fullmatch(size)
    if whole:
        return f"{_operand(whole.group(1))}//{whole.group(2)}"
    size = _FLOOR.sub(lambda m: f"({_operand(m.group(1))}//{m.group(2)})", size)
    return None if "ceil" in size or "floor" in size else size


def _operand(text: str) -> str:
    return text if re.fullmatch(r"[\w*]+", text) else f"({text})"
