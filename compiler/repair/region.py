"""One block's lines of a file, where each candidate fix is verified alone, the other blocks as they are.

What `nadc verify`'s suggestions and `nadc fix --list` rank candidates by: the block's progress (as
the repair loop measures a file, search.py) once the fix is applied. Nearly every candidate rewrites,
deletes or inserts whole node and edge lines; such a candidate is built as a graph: the block's own
nodes and edges where its lines stay, and only the new lines parsed (as the front end parses any line:
alone, so the diagnostics of the lines that stay stay too). Any other fix (columns inside a line, a
CRLF file, limits stricter than the defaults, a candidate near an input limit) is applied to the
block's text, which is parsed and verified whole. A candidate an editor made (edit.py's `EditorFix`)
is built from its change without writing its text: its changed and new edges made directly, its node
lines from their op text (read once per op text, whatever the node's id). All give the same verdict
(tests/test_repair_speed.py compares them on every candidate of the corpora and of mutated blocks).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Optional, Sequence

from nader.dsl.diagnostics import SAFE, Diagnostic, Edit, Fix, apply_fix
from nader.dsl.ir import Block, Edge, Node
from nader.dsl.limits import DEFAULT_LIMITS
from nader.dsl.ops import Group, Op
from nader.dsl.parser import parse, read_in_block
from nader.dsl.span import ColSpan, Span

from ..passes.contract import SQUARE
from ..passes.shapes import Limits
from ..passes.derived_facts import rewire, share_graph
from ..passes.verify import BlockReport, verify_block
from .edit import Change, EditorFix
from .kinds import order_of
from .search import block_progress

#: Verdicts on candidate blocks in this process, by options, then by the block's text and the fix (or the
#: text it makes): (progress, warnings, nodes). A block text sent again, or copied into several files, is
#: verified once. Each verdict is a function of its key, so what was verified before changes no result.
_VERIFIED: dict[tuple, dict] = {}
MOST_REMEMBERED = 4096

#: A candidate that must be verified from its text (`BlockRegion._as_graph`).
_TEXT = object()

SOURCES = Group.SOURCE
OUTPUT = Op.OUTPUT


def _position(edit: Edit) -> tuple[int, int]:
    return edit.span.line, edit.span.col


def _front_end(diagnostic: Diagnostic) -> bool:
    """A diagnostic of the front end (NAD1xx: a line it could not read or that it reported)."""
    return diagnostic.code.code.startswith("NAD1")


#: New lines a kind writes, read alone (`_read_line`): a kind writes the same ones again and again (`9:Add`).
_READ: dict[tuple, Optional[tuple]] = {}


def _read_line(line: str, limits) -> Optional[tuple]:
    """(nodes, edges, diagnostics) of one line of a block, as the front end reads it (each line alone); None
    where it is a header or past a limit (no block left)."""
    key = line if limits is DEFAULT_LIMITS else (line, limits)  # hashing the limits costs more than the line
    found = _READ.get(key, _TEXT)
    if found is _TEXT:
        if len(_READ) > MOST_REMEMBERED:
            _READ.clear()
        read = read_in_block(line) if limits is DEFAULT_LIMITS else None  # a clean node or edge line: no file
        if read is not None:
            found = _READ[key] = (read[0], read[1], ())
        else:
            parsed = parse(f"##B##\n{line}\n", "<line>", limits)
            blocks = parsed.program.blocks
            found = _READ[key] = (blocks[0].nodes, blocks[0].edges, tuple(parsed.diagnostics)) if len(blocks) == 1 \
                else None
    return found


#: The options of the last region and their verdicts: a command verifies every file with the same objects.
_LAST: list = [(), {}]


def _verdicts(role, stem_stride, domain, input_limits, limits: Limits) -> dict:
    """The verdicts remembered under these options (`_VERIFIED`), the last ones' found by the identity of
    their objects (and an equal `reference`, the one mutable part), others by their value."""
    objects, verified = _LAST
    if objects and objects[0] is role and objects[1] == stem_stride and objects[2] is domain and \
            objects[3] is input_limits and objects[4] is limits and objects[5] == limits.reference and \
            len(verified) <= MOST_REMEMBERED:
        return verified
    key = (role, stem_stride, domain, input_limits, limits.max_elements, limits.max_weights,
           tuple(sorted(limits.reference.items())))
    verified = _VERIFIED.get(key)
    if verified is None or len(verified) > MOST_REMEMBERED:
        verified = _VERIFIED[key] = {}
    _LAST[:] = (role, stem_stride, domain, input_limits, limits, dict(limits.reference)), verified
    return verified


class BlockRegion:
    """The block of `report` on lines [start, end) of a file split into `lines`; `file_level` are the file's
    own diagnostics (None where unknown: every candidate is then verified from its text)."""

    def __init__(self, lines: Sequence[str], start: int, end: int, report: BlockReport, options: dict,
                 file_level: Optional[Sequence[Diagnostic]] = None):
        self.lines, self.start, self.end, self.report = lines, start, end, report
        self._lines: Optional[tuple[list[int], list[int]]] = None
        self._wire_count: Optional[int] = None
        self.text = "\n".join(lines[start - 1:end - 1]) + ("\n" if end - 1 < len(lines) else "")
        self._starts: Optional[list[int]] = None  # of each line: only a candidate verified from its text needs them
        self.before = block_progress(report)
        self.path = options.get("path", "<string>")
        self.input_limits = options.get("input_limits", DEFAULT_LIMITS)
        self.role, self.stem_stride = options.get("role"), options.get("stem_stride", 1)
        self.limits, self.domain = options.get("limits") or Limits(), options.get("domain", SQUARE)
        # candidates built as graphs where the front end's diagnostics of these lines are known (a line's own)
        self.as_graph = file_level is not None and "\r" not in self.text and not self.input_limits.lowered()
        if self.as_graph:
            self.front_end = [d for d in report.diagnostics if _front_end(d)] + \
                [d for d in file_level if _front_end(d) and start <= d.span.line < end]
        # an editor's candidates built from their change (a CRLF file's new lines end in `\r`: its text decides)
        self.from_change = self.as_graph and not (lines and lines[0].endswith("\r"))
        self.verified = _verdicts(self.role, self.stem_stride, self.domain, self.input_limits, self.limits)

    def rank(self, fix: Fix, position: int) -> Optional[tuple[tuple, tuple]]:
        """(rank, `after`) of a candidate for an error of this block, ranked as the loop ranks: progress and
        warnings, nodes added, safety, the kind's order, `position`; None when the verifier gets no further
        with it."""
        try:
            after = self.after(fix)
        except (IndexError, ValueError):
            return None
        if after is None or after[0] >= self.before:
            return None
        return (after[:2], *tie_break(fix, after[2] - len(self.report.block.nodes)), position), after

    def after(self, fix: Fix) -> Optional[tuple[tuple, int, int]]:
        """(progress, warnings, nodes) of the block once `fix` is applied to it, verified alone; None when the
        fix reaches outside the block or its lines no longer form one block."""
        if type(fix) is EditorFix and self.from_change and fix.change.block is self.report.block:
            change = fix.change
            return self._remembered((self.text, None, change.key), self._from_change, change, fix)  # None: no text change
        start, end = self.start, self.end
        if any(e.span.line < start or e.span.end_line > end for e in fix.edits):
            return None
        changes = self._line_changes(fix) if self.as_graph else None
        if changes is not None:
            return self._remembered((self.text, changes), self._as_graph, changes, fix)
        return self._from_text(fix)

    def _remembered(self, key: tuple, build, change, fix: Fix) -> Optional[tuple[tuple, int, int]]:
        """The verdict remembered under `key`, else the one `build(change)` gets (remembered), else its text's."""
        found = self.verified.get(key, _TEXT)
        if found is _TEXT:
            found = build(change)
            if found is _TEXT:
                return self._from_text(fix)
            self.verified[key] = found
        return found

    # -- from the text --------------------------------------------------------------------------
    def _from_text(self, fix: Fix) -> Optional[tuple[tuple, int, int]]:
        text = self._applied(fix)
        found = self.verified.get(text, _TEXT)
        if found is not _TEXT:
            return found
        parsed = parse(text, self.path, self.input_limits)
        found = None
        if len(parsed.program.blocks) == 1:
            found = self._verdict(parsed.program.blocks[0], tuple(parsed.diagnostics))
        self.verified[text] = found
        return found

    def _verdict(self, block: Block, front_end: tuple, role=None) -> tuple[tuple, int, int]:
        report = verify_block(block, role=role or self.role, stem_stride=self.stem_stride, limits=self.limits, file=self.path,
                              front_end=front_end, domain=self.domain, counting=True)  # its progress alone is read
        progress = block_progress(report)
        return progress, len(report.diagnostics) - progress[2], len(block.nodes)

    def _applied(self, fix: Fix) -> str:
        """The block's text with `fix` applied (`apply_fix` on these lines, its offsets computed once)."""
        shift = self.start - 1
        text = self.text
        if not fix.edits:
            return text
        if max(e.span.line for e in fix.edits) - shift > text.count("\n") + 1 and not text.endswith("\n"):
            moved = Fix(tuple(Edit(Span(e.span.line - shift, e.span.col, e.span.end_line - shift, e.span.end_col),
                                   e.text) for e in fix.edits))
            return apply_fix(text, moved)  # past the last line: apply_fix adds the line break first
        starts = self._starts
        if starts is None:
            starts = self._starts = [0, *accumulate(len(line) + 1 for line in text.split("\n")[:-1])]
        size = len(text)
        for e in sorted(fix.edits, key=_position, reverse=True):
            line, end_line = e.span.line - shift, e.span.end_line - shift
            start = starts[line - 1] + e.span.col - 1 if line <= len(starts) else size
            end = starts[end_line - 1] + e.span.end_col - 1 if end_line <= len(starts) else size
            text = text[:start] + e.text + text[end:]
        return text

    # -- as a graph -----------------------------------------------------------------------------
    def _item_lines(self) -> tuple[list[int], list[int]]:
        """The lines of the block's nodes and of its edges, in order (as the front end read them)."""
        found = self._lines
        if found is None:
            block = self.report.block
            found = self._lines = ([n.span.line for n in block.nodes], [e.span.line for e in block.edges])
        return found

    def _wires(self) -> int:
        """The wires of the block (each source of an edge line)."""
        found = self._wire_count
        if found is None:
            found = self._wire_count = sum(len(e.sources) for e in self.report.block.edges)
        return found

    def _line_changes(self, fix: Fix) -> Optional[tuple]:
        """The fix as whole lines: ((first line, last line replaced, the new lines), ...) in order (last < first:
        an insertion before `first`); None where an edit starts or ends inside a line, touches the header, or
        two edits meet."""
        lines, header = self.lines, self.start
        changes, after, previous = [], header, None
        for e in sorted(fix.edits, key=_position):
            first, col, end_line, end_col = e.span
            text = e.text
            if col != 1 or first <= after or first == previous:
                return None
            previous = first
            if end_col == 1:
                last = end_line - 1
            elif end_line <= len(lines) and end_col == len(lines[end_line - 1]) + 1:
                last, text = end_line, text + "\n"
            else:
                return None
            if text and not text.endswith("\n") or "\r" in text or last >= self.end:
                return None
            changes.append((first, last, tuple(text.split("\n")[:-1])))
            after = max(first - 1, last)
        return tuple(changes)

    def _as_graph(self, changes: tuple):
        """The verdict on the block with its lines changed, built from its own nodes and edges and the new
        lines (parsed alone, as the front end parses each line); `_TEXT` where the text must decide."""
        limits = self.input_limits
        added_size = sum(len(line) + 1 for _, _, added in changes for line in added)
        if (len(self.text) + added_size) * 4 > limits.text_bytes:
            return _TEXT  # near the size limit: the text decides
        block = self.report.block
        kept_nodes, kept_edges = block.nodes, block.edges
        node_lines, edge_lines = self._item_lines()
        nodes, edges, front_end = [], [], []
        n = e = 0  # the next kept node and edge
        for first, last, added in changes:
            upto = bisect_left(node_lines, first)
            nodes += kept_nodes[n:upto]
            n = max(upto, bisect_right(node_lines, last))
            upto = bisect_left(edge_lines, first)
            edges += kept_edges[e:upto]
            e = max(upto, bisect_right(edge_lines, last))
            for line in added:
                read = _read_line(line, limits)
                if read is None:
                    return _TEXT  # a header (or a line past a limit): the text decides
                nodes += read[0]
                edges += read[1]
                front_end += read[2]
        nodes += kept_nodes[n:]
        edges += kept_edges[e:]
        if len(nodes) > limits.nodes_per_block or sum(len(x.sources) for x in edges) > limits.inputs_per_node:
            return _TEXT  # the front end's limits on the whole block: the text decides
        candidate = Block(block.name, tuple(nodes), tuple(edges), span=block.span, header_span=block.header_span)
        if self.front_end:  # the front end's words on the lines that stay (each is about its own line)
            gone = {line for first, last, _ in changes for line in range(first, last + 1)}
            front_end = [d for d in self.front_end if d.span.line not in gone] + front_end
        return self._verdict(candidate, tuple(front_end))

    # -- from an editor's change ----------------------------------------------------------------
    def _from_change(self, change: Change):
        """The verdict on the block with an editor's `change`, as `_as_graph` builds it from the lines the
        change writes (the same nodes and edges, in the same order), without writing them; `_TEXT` where the
        text must decide."""
        limits = self.input_limits
        block = self.report.block
        node_lines, rows = change.node_lines, change.edge_rows
        front_end: list = []
        size = 0  # characters of the lines the change writes
        if change.new_nodes and len(str(change.new_nodes[-1][0])) > DEFAULT_LIMITS.digits_per_number:
            return _TEXT  # new ids past the digit limit (the ids grow): the front end's words on them decide
        if node_lines and min(node_lines) <= self.start or rows and next(iter(rows)) <= self.start:
            return _TEXT  # the header's line (a file without one: its first line): `_line_changes` leaves it too
        kept_nodes, kept_edges = block.nodes, block.edges
        node_rows, edge_rows = self._item_lines()
        wires = self._wires()  # of the candidate: an upper bound until edges go
        terminals = False  # whether the change writes or deletes an input terminal's line
        same_ids = True  # whether the node lines it writes keep their ids, and which is the output
        if node_lines:
            nodes, n, ops = [], 0, change.node_ops
            for line in sorted(node_lines):
                at = bisect_left(node_rows, line)
                if at == len(node_rows) or node_rows[at] != line:
                    return _TEXT  # a line that holds no node
                nodes += kept_nodes[n:at]
                n, text, old = at + 1, node_lines[line], kept_nodes[at]
                terminals |= old.op in SOURCES
                if text is None:
                    same_ids = False
                    continue
                size += len(text) + 1
                op = ops.get(line)
                read = _node_line(text, limits, *((old.id, op[0], old.comment) if op is not None else ()))
                if read is None:
                    return _TEXT  # a header, several lines, or edges among the node lines: the text decides
                nodes += read[0]
                front_end += read[1]
                terminals |= any(x.op in SOURCES for x in read[0])
                same_ids = same_ids and len(read[0]) == 1 and read[0][0].id == old.id and \
                    (read[0][0].op is OUTPUT) is (old.op is OUTPUT)
            nodes += kept_nodes[n:]
        else:
            nodes = kept_nodes  # the block's tuple, until a node is added
        if rows:
            edges, e = [], 0
            for line, written in rows.items():  # in line order: each line's rows in place of its edges
                at, e_next = bisect_left(edge_rows, line), bisect_right(edge_rows, line)
                edges += kept_edges[e:at]
                e, comment = e_next, change.comment(line)
                for sources, target in written:
                    new = _edge(sources, target, comment)
                    length = new.span.end_col + (len(comment) + 2 if comment else 0)  # its line break too
                    if length > DEFAULT_LIMITS.line_length:
                        return _TEXT
                    size += length
                    wires += len(sources)
                    edges.append(new)
                    comment = None
            edges += kept_edges[e:]
        else:
            edges = kept_edges
        if change.new_nodes and nodes is kept_nodes:
            nodes = [*kept_nodes]
        if change.new_edges and edges is kept_edges:
            edges = [*kept_edges]
        for node_id, op in change.new_nodes:
            text = f"{node_id}:{op}"
            size += len(text) + 1
            read = _node_line(text, limits, node_id, op, None)
            if read is None:
                return _TEXT
            nodes += read[0]
            front_end += read[1]
            terminals |= any(x.op in SOURCES for x in read[0])
        for sources, target in change.new_edges:
            new = _edge(sources, target, None)
            if new.span.end_col > DEFAULT_LIMITS.line_length:
                return _TEXT
            size += new.span.end_col
            wires += len(sources)
            edges.append(new)
        if wires > limits.inputs_per_node:
            wires = sum(len(x.sources) for x in edges)
        if (len(self.text) + size) * 4 > limits.text_bytes or len(nodes) > limits.nodes_per_block or \
                wires > limits.inputs_per_node:
            return _TEXT  # near the front end's limits on the whole text or block: the text decides
        candidate = Block(block.name, nodes if nodes is kept_nodes else tuple(nodes),
                          edges if edges is kept_edges else tuple(edges), (), None, (), block.span, block.header_span)
        if self.front_end:  # the front end's words on the lines that stay (each is about its own line)
            gone = {*node_lines, *rows}
            front_end = [d for d in self.front_end if d.span.line not in gone] + front_end
        # what verifying it computes of the graph, taken from the block's where the change leaves it alone
        if nodes is kept_nodes:
            rewire(candidate, block, change.rewired())
        elif edges is kept_edges and same_ids and not change.new_nodes:
            share_graph(candidate, block)
        # the role a block is verified in is inferred from its name and input terminals: the block's, where
        # the change leaves those alone (`Block.inferred_role` costs a walk of the nodes)
        return self._verdict(candidate, tuple(front_end), self.role if terminals else self.report.role)


def tie_break(fix: Fix, added: int) -> tuple:
    """How `BlockRegion.rank` orders candidates as good as each other (then by position): fewer nodes `added`,
    safe before unsafe, the kind's order."""
    return added, fix.safety != SAFE, order_of(fix.kind)


def _node_line(text: str, limits, node_id=None, op_text: Optional[str] = None, comment: Optional[str] = None):
    """(nodes, front-end diagnostics) of the node line `text` a change writes (`node_id:op_text`, and `comment`,
    where known: read from its op text, `_node`), as `_read_line` reads it; None where it is not node lines
    alone (a header, several lines, edges): the text decides."""
    if op_text is not None:
        node = _node(node_id, op_text, comment, len(text))
        if node is not None:
            return (node,), ()
    read = _read_line(text, limits) if "\n" not in text else None
    return None if read is None or read[1] else (read[0], read[2])


#: Node lines by their op text and the width of their id (`_node`): `11:Conv2d(out_channels=C,kernel_size=1)`
#: recurs with other ids, in other blocks.
_OPS: dict[tuple[str, int], Optional[Node]] = {}


def _node(node_id, op_text: str, comment: Optional[str], length: int) -> Optional[Node]:
    """The node of the line `{node_id}:{op_text}` (and `comment`; `length` characters) as `read_in_block` reads
    it; None where that line is no clean node line, or near a limit (`_read_line` reads it)."""
    width = len(str(node_id))
    if length > DEFAULT_LIMITS.line_length or width > DEFAULT_LIMITS.digits_per_number:
        return None
    key = (op_text, width)
    like = _OPS.get(key, _TEXT)
    if like is _TEXT:
        if len(_OPS) > MOST_REMEMBERED:
            _OPS.clear()
        read = read_in_block(f"{'0' * width}:{op_text}")  # the same columns as the line's: no check reads the id
        clean = read is not None and read[0] and read[0][0].comment is None and "\n" not in op_text
        like = _OPS[key] = read[0][0] if clean else None
    if like is None:
        return None
    return Node._parsed(node_id, like.op_name, like.args, comment, (), like.span, like.id_span, like.op_span,
                        like.params, like.opdef)


#: Edges `_edge` made, by (sources, target, comment): a kind writes the same ones again and again (`3->9`).
_EDGES: dict[tuple, Edge] = {}


def _edge(sources: tuple, target, comment: Optional[str]) -> Edge:
    """The edge of the line `a,b->target` (and `comment`) as `read_in_block` reads it, without reading it
    (one object for every candidate that has it: no pass changes an edge)."""
    key = (sources, target, comment)
    found = _EDGES.get(key)
    if found is None:
        if len(_EDGES) > MOST_REMEMBERED:
            _EDGES.clear()
        found = _EDGES[key] = _new_edge(sources, target, comment)
    return found


def _new_edge(sources: tuple, target, comment: Optional[str]) -> Edge:
    cols, col = [], 1
    for source in sources:
        end = col + len(str(source))
        cols.append(ColSpan(col, end))
        col = end + 1
    first = col + 1  # past `->`
    last = first + len(str(target))
    return Edge(sources, target, comment, (), Span(2, 1, 2, last), tuple(cols), ColSpan(first, last))
