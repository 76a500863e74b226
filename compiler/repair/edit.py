"""Line-level edits of one block, turned into a `Fix`.

A repair rewrites only the lines it changes: a node line whose operation or arguments change,
an edge line whose sources or target change, a deleted line; new node lines go after the
block's last node line, new edge lines after its last line. Comments on untouched lines stay,
and the diff a user reviews is as small as the change.

Most candidates a search makes are verified and dropped, never shown: the `Fix` an editor makes
(`EditorFix`) keeps the change itself (`Change`: nodes and edge lines as the editor left them), which
region.py builds the candidate block from, and writes its text edits only when they are read.
"""
from __future__ import annotations

from typing import Optional, Sequence

from nader.dsl.diagnostics import SAFE, Edit, Fix
from nader.dsl.ir import Block, Node, NodeId, free_id
from nader.dsl.span import Span


def _with_comment(text: str, comment: Optional[str]) -> str:
    return f"{text}  {comment}" if comment else text


# Facts of the block every editor of it needs (a repair makes several editors per block, one per candidate).
def _free_id(block: Block) -> int:
    return free_id(n.id for n in block.nodes)


def _layout(block: Block) -> tuple[dict[int, list[int]], int, int]:
    """(edge indices by line: a chain `a->b->c` is several edges on one line; the last node line; the
    last node or edge line): where a fix rewrites edge lines and inserts new ones."""
    on_line: dict[int, list[int]] = {}
    for index, edge in enumerate(block.edges):
        on_line.setdefault(edge.span.line, []).append(index)
    node_rows = [n.span.line for n in block.nodes]
    after_nodes = max(node_rows, default=block.header_span.line)
    after_all = max([*node_rows, *on_line], default=block.header_span.line)
    return on_line, after_nodes, after_all


class BlockEditor:
    """Collects changes to one block of a file's `lines` (the file split at `\\n`)."""

    __slots__ = ("block", "lines", "node_lines", "edge_sources", "edge_targets", "node_ops", "new_nodes", "new_edges",
                 "_next_id", "added", "removed")

    def __init__(self, block: Block, lines: Sequence[str]):
        self.block = block
        self.lines = lines
        self.node_lines: dict[int, Optional[str]] = {}  # line -> new text, None: deleted
        self.edge_sources: dict[int, list[NodeId]] = {}  # edge index -> its sources now
        self.edge_targets: dict[int, NodeId] = {}
        self.node_ops: dict[int, tuple[str, Node, str]] = {}  # line -> (op text, node, its `node_lines` text)
        self.new_nodes: list[tuple[int, str]] = []  # (id, op text)
        self.new_edges: list[tuple[tuple[NodeId, ...], NodeId]] = []
        self._next_id: Optional[int] = None  # the block's free id, found when a node is added: most add none
        self.added = 0  # nodes added
        self.removed = 0  # nodes removed

    # -- nodes ---------------------------------------------------------------------------------
    def add_node(self, op_text: str) -> int:
        """A new node `ID:op_text`; its id."""
        new_id = self._next_id
        if new_id is None:
            new_id = self.block.analysis("repair.free_id", _free_id)
        self._next_id = new_id + 1
        self.new_nodes.append((new_id, op_text))
        self.added += 1
        return new_id

    def set_node(self, node: Node, op_text: str) -> None:
        """Replace `node`'s operation and arguments by `op_text` (`Conv2d(out_channels=C)`)."""
        line = self.node_lines[node.span.line] = _with_comment(f"{node.id}:{op_text}", node.comment)
        self.node_ops[node.span.line] = (op_text, node, line)

    def drop_node(self, node: Node) -> None:
        """Delete the node line and every wire into or out of the node."""
        self.node_lines[node.span.line] = None
        self.removed += 1
        gone = node.id
        for index in range(len(self.block.edges)):
            sources = self._sources(index)
            if self.target(index) == gone:
                self.edge_sources[index] = []
            elif gone in sources:
                self.edge_sources[index] = [s for s in sources if s != gone]

    # -- wires ---------------------------------------------------------------------------------
    def sources(self, index: int) -> list[NodeId]:
        """The sources of edge line `index` now (a list of the editor's own: changing it changes the edit)."""
        found = self.edge_sources.get(index)
        return found if found is not None else list(self.block.edges[index].sources)

    def _sources(self, index: int) -> Sequence[NodeId]:
        """`sources`, to read only (no copy of an unchanged line's)."""
        found = self.edge_sources.get(index)
        return found if found is not None else self.block.edges[index].sources

    def target(self, index: int) -> NodeId:
        return self.edge_targets.get(index, self.block.edges[index].target)

    def wires_into(self, target: NodeId) -> list[tuple[int, int]]:
        """(edge index, source position) of each wire into `target`, in operand order."""
        targets = self.edge_targets
        found = []
        for k, edge in enumerate(self.block.edges):
            if targets.get(k, edge.target) == target:
                found.extend((k, j) for j in range(len(self._sources(k))))
        return found

    def wires_from(self, source: NodeId) -> list[tuple[int, int]]:
        return [(k, j) for k in range(len(self.block.edges)) for j, s in enumerate(self._sources(k)) if s == source]

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
        self.new_edges.append(((source,), target))

    def insert_between(self, index: int, position: int, op_text: str) -> int:
        """A new node on one wire: `source -> new -> target`; the new node's id."""
        new_id = self.add_node(op_text)
        source = self.sources(index)[position]
        self.set_source(index, position, new_id)
        self.add_wire(source, new_id)
        return new_id

    # -- the fix -------------------------------------------------------------------------------
    def fix(self, kind: str, message: str, safety: str = SAFE) -> "EditorFix":
        """The change so far as a fix (what the editor holds is copied: the kind may go on editing)."""
        rows = {}
        changed, retargeted = self.edge_sources, self.edge_targets
        if changed or retargeted:  # each rewritten edge line's rows (`_sources` and `target`, written out: one a candidate)
            on_line, edges = self.block.analysis("repair.layout", _layout)[0], self.block.edges
            for line in sorted({edges[k].span.line for k in (*changed, *retargeted)}):
                row = []
                for k in on_line[line]:
                    sources = changed.get(k)
                    if sources is None:
                        sources = edges[k].sources
                    if sources:
                        row.append((tuple(sources), retargeted.get(k, edges[k].target)))
                rows[line] = tuple(row)
        change = Change(self.block, self.lines, dict(self.node_lines), self.node_ops, rows, tuple(self.new_nodes),
                        tuple(self.new_edges))
        return EditorFix(change, kind, safety, message)


class Change:
    """What an editor changed in its block: node lines (line -> text, None: deleted; `node_ops`: those
    `set_node` wrote, by op text), edge lines (line -> its (sources, target) rows now, one a line), new
    nodes ((id, op text), after the last node line) and new edges ((sources, target), after the last line).
    `key` is a function of the candidate it makes (region.py remembers verdicts by it)."""

    __slots__ = ("block", "lines", "node_lines", "node_ops", "edge_rows", "new_nodes", "new_edges", "key")

    def __init__(self, block: Block, lines: Sequence[str], node_lines: dict, node_ops: dict, edge_rows: dict,
                 new_nodes: tuple, new_edges: tuple):
        self.block, self.lines, self.node_lines, self.edge_rows = block, lines, node_lines, edge_rows
        self.node_ops = {line: op for line, op in node_ops.items() if node_lines.get(line) is op[2]} if node_ops else {}
        self.new_nodes, self.new_edges = new_nodes, new_edges
        lines_now = tuple(node_lines.items())
        self.key = (tuple(sorted(lines_now)) if len(lines_now) > 1 else lines_now, tuple(edge_rows.items()), new_nodes,
                    new_edges)

    def comment(self, line: int) -> Optional[str]:
        """The comment an edge line keeps (on its first row) when the change rewrites it."""
        edges = self.block.edges
        return next((edges[k].comment for k in self.block.analysis("repair.layout", _layout)[0][line]
                     if edges[k].comment), None)

    def rewired(self) -> set:
        """The nodes whose inputs the change may change: the targets of the edges on the lines it rewrites, before
        and after, and of its new edges."""
        edges, on_line = self.block.edges, self.block.analysis("repair.layout", _layout)[0]
        found = {target for _, target in self.new_edges}
        for line, rows in self.edge_rows.items():
            found.update(edges[k].target for k in on_line[line])
            found.update(target for _, target in rows)
        return found

    def edits(self) -> tuple[Edit, ...]:
        """The change as text edits of the file's lines."""
        changed: dict[int, Optional[str]] = dict(self.node_lines)
        crlf = bool(self.lines) and self.lines[0].endswith("\r")  # keep a CRLF file's line ends
        end = "\r\n" if crlf else "\n"
        _, after_nodes, after_all = self.block.analysis("repair.layout", _layout)
        for line, rows in self.edge_rows.items():
            comment = self.comment(line)
            written = [f"{','.join(map(str, sources))}->{target}" for sources, target in rows]
            # a changed chain is written one edge a line, as `nadc fmt` writes it
            changed[line] = end.join([_with_comment(written[0], comment), *written[1:]]) if written else None
        inserts: dict[int, list[str]] = {}
        if self.new_nodes:
            inserts.setdefault(after_nodes + 1, []).extend(f"{i}:{op}" for i, op in self.new_nodes)
        if self.new_edges:
            inserts.setdefault(after_all + 1, []).extend(f"{','.join(map(str, s))}->{t}" for s, t in self.new_edges)
        edits = []
        lines, count = self.lines, len(self.lines)
        for line, text in sorted(changed.items()):
            old = lines[line - 1] if line <= count else ""
            inserted = inserts.pop(line, None) if inserts else None
            before = "".join(t + end for t in inserted) if inserted else ""
            if text is None:
                edits.append(Edit(Span(line, 1, line + 1, 1), before))
            elif text != old.rstrip("\r") or before:
                edits.append(Edit(Span(line, 1, line, len(old) + 1), before + text + ("\r" if old.endswith("\r") else "")))
        for line, texts in sorted(inserts.items()):
            edits.append(Edit(Span(line, 1, line, 1), "".join(t + end for t in texts)))
        return tuple(sorted(edits, key=lambda e: e.span))


class EditorFix(Fix):
    """A `Fix` an editor made: its `change`, and its edits, written on first use (`edits`): the region
    verifies most candidates from the change, and only those shown (or applied) need their text.
    Equal to the plain `Fix` of the same edits; pickled as one (the change holds the file's lines)."""

    def __init__(self, change: Change, kind: str, safety: str, message: str):
        self.__dict__.update(change=change, kind=kind, safety=safety, message=message)  # frozen: not by setattr

    def __getattr__(self, name: str):
        if name != "edits":
            raise AttributeError(name)
        edits = self.change.edits()
        object.__setattr__(self, "edits", edits)
        return edits

    def _fields(self) -> tuple:
        return self.edits, self.kind, self.safety, self.message

    def __eq__(self, other) -> bool:
        if not isinstance(other, Fix):
            return NotImplemented
        return self._fields() == (other.edits, other.kind, other.safety, other.message)

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self):
        return Fix, self._fields()
