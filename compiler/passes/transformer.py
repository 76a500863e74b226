"""The walk that builds a new block: `Transformer`, as torch.fx pairs its `Transformer` with its
`Interpreter` (`interpreter.py`).

A node's value is the id that stands for it in the new block (what its consumers read); each node
is copied unless a handler emits something else, and `finish` assembles the new block, with the
parent's lines in their places. The mutations are rewrites on it (`compiler/mutate/rewrite.py`). It
is a module of its own so that `nadc verify`, whose passes only read blocks, does not load it (in
`interpreter.py` it cost `nadc verify` 0.08% more instructions from process start).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Iterable, Mapping, Optional, Sequence

from nader.dsl.ir import Block, Edge, Node, NodeId
from nader.dsl.ops import Group

from .interpreter import Interpreter

#: A node's value in a `Transformer` when it was dropped with its wires: consumers lose that input.
GONE = object()


class Transformer(Interpreter):
    """A walk that builds a new block from the old one (torch.fx's `Transformer`).

    A node's value is the id its consumers read in the new block. A node is copied with the ids its
    inputs now have (`keep`), unless its handler does something else: its rule (`rules`, by node id:
    what a mutation changes) or its operation's (`HANDLERS`, as the other walks' tables), called as
    `handler(transformer, node, inputs)`. A handler may keep the node with other inputs or as another
    node (`keep(node, inputs, as_node)`), add new nodes (`emit`, with `fresh_id`) and give its
    consumers one of those, or drop it, its consumers reading the id it returns (or losing that
    wire: `GONE`).

    `finish` returns the new block: the nodes kept in the parent's order, then the new ones in the
    order they were made; the parent's edge lines in their places (a line's sources are the ids its
    target's inputs now have, position by position; a line left with none goes), then one line per
    wire of each new node. Comments stay with their lines, so the text changes where the graph does.
    `prune` leaves out the nodes (and their wires) that no longer lead to the output. The walk needs a
    graph (it is for verified blocks: an order, ids defined once); `repair/edit.py` edits lines instead.
    """

    __slots__ = ("rules", "emitted", "added", "added_edges", "prune", "_taken", "_next", "_as_text")

    REQUIRED: ClassVar[frozenset] = frozenset()  # copying is every operation's default
    HANDLER_NAME: ClassVar[str] = "rewrite"

    def __init__(self, block: Block, rules: Mapping[NodeId, Callable] = {}, *, order: Optional[Iterable[NodeId]] = None,
                 prune: bool = False):
        super().__init__(block, order)
        if block.topological_order() is None or len(self.nodes) != len(block.nodes):
            raise ValueError(f"block `{block.name}` is no graph to walk (a cycle, or an id defined twice): "
                             "a Transformer rewrites verified blocks")
        self.rules = rules
        self.emitted: dict[NodeId, tuple[Node, tuple]] = {}  # a kept node's id -> (its node now, the ids it reads)
        self.added: list[Node] = []
        self.added_edges: list[Edge] = []
        self.prune = prune
        self._taken: Optional[set] = None  # the ids as text, when a new one is first asked for

    def run_node(self, node: Node, inputs: tuple) -> Any:
        """Every node, terminals included: its rule, else its operation's handler, else a copy."""
        rule = self.rules.get(node.id)
        if rule is not None:
            return rule(self, node, inputs)
        handler = self.HANDLERS.get(node.op)  # type: ignore[call-overload]
        if handler is None:
            self.emitted[node.id] = (node, inputs)  # `keep`, inlined: most nodes are copied
            return node.id
        return self.apply(handler, node, inputs)

    # -- building the new block ----------------------------------------------------------------
    def keep(self, node: Node, inputs: Sequence, as_node: Optional[Node] = None) -> NodeId:
        """`node` in the new block (or `as_node` in its place, with its id), reading `inputs`."""
        self.emitted[node.id] = (node if as_node is None else as_node, tuple(inputs))
        return node.id

    def fresh_id(self) -> NodeId:
        """An integer id that no id of the block spells (as text where all ids are text)."""
        taken = self._taken
        if taken is None:
            ids, self._next, self._as_text = self.block.analysis("transformer.ids", _ids)
            taken = self._taken = set(ids)
        while str(self._next) in taken:
            self._next += 1
        new = self._next
        taken.add(str(new))
        self._next += 1
        return str(new) if self._as_text else new

    def emit(self, node: Node, inputs: Sequence[NodeId]) -> NodeId:
        """A new node (its id from `fresh_id`), fed by `inputs`: one edge line each, in operand order."""
        self.added.append(node)
        self.added_edges.extend(Edge((source,), node.id) for source in inputs)
        return node.id

    def finish(self) -> Block:
        b, emitted = self.block, self.emitted
        nodes = [emitted[n.id][0] for n in b.nodes if n.id in emitted] + self.added
        # A kept node that reads other ids than its lines name: the lines take them position by
        # position, or, where their count changed, it gets new lines (`rewired`).
        original = b.analysis("transformer.inputs", _input_tuples)
        feeds, rewired = {}, {}
        for t, (_, reads) in emitted.items():
            sources = original.get(t, ())
            if reads != sources:
                if len(reads) == len(sources):
                    feeds[t] = iter(reads)
                else:
                    rewired[t] = reads
        edges: list[Edge] = []
        for e in b.edges:
            target = e.target
            if target not in emitted or target in rewired:
                continue  # its target is gone, or rewired below
            feed = feeds.get(target)
            if feed is None:
                edges.append(e)
                continue
            sources = tuple(s for s in (next(feed) for _ in e.sources) if s is not GONE)
            if sources:
                edges.append(e if sources == e.sources else dataclasses.replace(e, sources=sources))
        edges += [Edge((s,), t) for t, reads in rewired.items() for s in reads if s is not GONE]
        edges += self.added_edges
        if self.prune:
            nodes, edges = _pruned(nodes, edges)
        return Block(b.name, tuple(nodes), tuple(edges), b.leading_comments, b.header_comment, b.trailing_comments)


def _ids(block: Block) -> tuple[frozenset, int, bool]:
    """The ids a block spells (as text), the first integer above them, and whether all are text:
    what `fresh_id` starts from (computed once per block)."""
    taken = frozenset({str(n.id) for n in block.nodes} | {str(i) for e in block.edges for i in (*e.sources, e.target)})
    # Where every id is a string (a front end that keeps ids as text), new ids are text too.
    as_text = bool(block.nodes) and all(isinstance(n.id, str) for n in block.nodes)
    return taken, 1 + max((int(t) for t in taken if t.isdigit()), default=-1), as_text


def _input_tuples(block: Block) -> dict:
    """Each node's inputs, in edge order, as a tuple: what a walk's inputs are compared with."""
    return {target: tuple(sources) for target, sources in block.input_map().items()}


def _pruned(nodes: list[Node], edges: list[Edge]) -> tuple[list[Node], list[Edge]]:
    """The nodes that lead to a sink (and the sources), and the wires between them."""
    feeding: dict[NodeId, list[NodeId]] = {}
    for e in edges:
        feeding.setdefault(e.target, []).extend(e.sources)
    alive = {n.id for n in nodes if n.op in Group.SINK}
    stack = list(alive)
    while stack:
        for s in feeding.get(stack.pop(), ()):
            if s not in alive:
                alive.add(s)
                stack.append(s)
    dead = {n.id for n in nodes if n.id not in alive and n.op not in Group.SOURCE}
    if not dead:
        return nodes, edges
    kept = []
    for e in edges:
        if e.target in dead:
            continue
        if dead.intersection(e.sources):
            sources = tuple(s for s in e.sources if s not in dead)
            if not sources:
                continue
            e = dataclasses.replace(e, sources=sources)
        kept.append(e)
    return [n for n in nodes if n.id not in dead], kept


__all__ = ["GONE", "Transformer"]
