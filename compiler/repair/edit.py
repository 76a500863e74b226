"""Line-level edits of one block, turned into a `Fix`.

A repair rewrites only the lines it changes: a node line whose operation or arguments change,
an edge line whose sources or target change, a deleted line; new node lines go after the
block's last node line, new edge lines after its last line. Comments on untouched lines stay,
and the diff a user reviews is as small as the change.
"""
from __future__ import annotations

from typing import Optional, Sequence

from nader.dsl.diagnostics import SAFE, Edit, Fix
from nader.dsl.ir import Block, Node, NodeId, free_id
from nader.dsl.span import Span


def _with_comment(text: str, comment: Optional[str]) -> str:
    return f"{text}  {comment}" if comment else text


class BlockEditor:
    """Collects changes to one block of a file's `lines` (the file split at `\\n`)."""

    def __init__(self, block: Block, lines: Sequence[str]):
        self.block = block
        self.lines = lines
        self.node_lines: dict[int, Optional[str]] = {}  # line -> new text, None: deleted
        self.edge_sources: dict[int, list[NodeId]] = {}  # edge index -> its sources now
        self.edge_targets: dict[int, NodeId] = {}
        self.new_nodes: list[str] = []
        self.new_edges: list[tuple[list[NodeId], NodeId]] = []
        self._next_id = free_id(n.id for n in block.nodes)
        self.added = 0  # nodes added
        self.removed = 0  # nodes removed

    # -- nodes ---------------------------------------------------------------------------------
    def add_node(self, op_text: str) -> int:
        """A new node `ID:op_text`; its id."""
        new_id = self._next_id
        self._next_id += 1
        self.new_nodes.append(f"{new_id}:{op_text}")
        self.added += 1
        return new_id

    def set_node(self, node: Node, op_text: str) -> None:
        """Replace `node`'s operation and arguments by `op_text` (`Conv2d(out_channels=C)`)."""
        self.node_lines[node.span.line] = _with_comment(f"{node.id}:{op_text}", node.comment)

    def drop_node(self, node: Node) -> None:
        """Delete the node line and every wire into or out of the node."""
        self.node_lines[node.span.line] = None
        self.removed += 1
        for index, edge in enumerate(self.block.edges):
            sources = self.sources(index)
            if self.target(index) == node.id:
                self.edge_sources[index] = []
            elif node.id in sources:
                self.edge_sources[index] = [s for s in sources if s != node.id]

    # -- wires ---------------------------------------------------------------------------------
    def sources(self, index: int) -> list[NodeId]:
        return self.edge_sources.get(index, list(self.block.edges[index].sources))

    def target(self, index: int) -> NodeId:
        return self.edge_targets.get(index, self.block.edges[index].target)

    def wires_into(self, target: NodeId) -> list[tuple[int, int]]:
        """(edge index, source position) of each wire into `target`, in operand order."""
        return [(k, j) for k in range(len(self.block.edges)) if self.target(k) == target
                for j in range(len(self.sources(k)))]

    def wires_from(self, source: NodeId) -> list[tuple[int, int]]:
        return [(k, j) for k in range(len(self.block.edges)) for j, s in enumerate(self.sources(k)) if s == source]

    def set_source(self, index: int, position: int, source: NodeId) -> None:
        sources = self.sources(index)
        sources[position] = source
        self.edge_sources[index] = sources

    def retarget(self, index: int, position: int, target: NodeId) -> None:
        """Send one wire of edge line `index` to `target` instead (in place when it is the line's only source)."""
        sources = self.sources(index)
        if len(sources) == 1:
            self.edge_targets[index] = target
            return
        source = sources.pop(position)
        self.edge_sources[index] = sources
        self.add_wire(source, target)

    def remove_wire(self, index: int, position: int) -> None:
        sources = self.sources(index)
        sources.pop(position)
        self.edge_sources[index] = sources

    def add_wire(self, source: NodeId, target: NodeId) -> None:
        self.new_edges.append(([source], target))

    def insert_between(self, index: int, position: int, op_text: str) -> int:
        """A new node on one wire: `source -> new -> target`; the new node's id."""
        new_id = self.add_node(op_text)
        source = self.sources(index)[position]
        self.set_source(index, position, new_id)
        self.add_wire(source, new_id)
        return new_id

    # -- the fix -------------------------------------------------------------------------------
    def fix(self, kind: str, message: str, safety: str = SAFE) -> Fix:
        changed: dict[int, Optional[str]] = dict(self.node_lines)
        crlf = bool(self.lines) and self.lines[0].endswith("\r")  # keep a CRLF file's line ends
        end = "\r\n" if crlf else "\n"
        on_line: dict[int, list[int]] = {}  # a chain `a->b->c` is several edges on one line
        for index, edge in enumerate(self.block.edges):
            on_line.setdefault(edge.span.line, []).append(index)
        for line, indices in on_line.items():
            if not any(k in self.edge_sources or k in self.edge_targets for k in indices):
                continue
            rows = [f"{','.join(map(str, self.sources(k)))}->{self.target(k)}" for k in indices if self.sources(k)]
            comment = next((self.block.edges[k].comment for k in indices if self.block.edges[k].comment), None)
            # a changed chain is written one edge a line, as `nadc fmt` writes it
            changed[line] = end.join([_with_comment(rows[0], comment), *rows[1:]]) if rows else None
        node_rows = [n.span.line for n in self.block.nodes]
        all_rows = node_rows + [e.span.line for e in self.block.edges]
        after_nodes = max(node_rows, default=self.block.header_span.line)
        after_all = max(all_rows, default=self.block.header_span.line)
        inserts: dict[int, list[str]] = {}
        if self.new_nodes:
            inserts.setdefault(after_nodes + 1, []).extend(self.new_nodes)
        if self.new_edges:
            inserts.setdefault(after_all + 1, []).extend(f"{','.join(map(str, s))}->{t}" for s, t in self.new_edges)
        edits = []
        for line, text in sorted(changed.items()):
            old = self.lines[line - 1] if line <= len(self.lines) else ""
            before = "".join(t + end for t in inserts.pop(line, ()))
            if text is None:
                edits.append(Edit(Span(line, 1, line + 1, 1), before))
            elif text != old.rstrip("\r") or before:
                edits.append(Edit(Span(line, 1, line, len(old) + 1), before + text + ("\r" if old.endswith("\r") else "")))
        for line, texts in sorted(inserts.items()):
            edits.append(Edit(Span(line, 1, line, 1), "".join(t + end for t in texts)))
        return Fix(tuple(sorted(edits, key=lambda e: e.span)), kind, safety, message)
