"""Editing a block as an IR rewrite: new nodes, rewired edges, removed nodes.

Operators never build block text. They open a `Rewrite` on the parent block,
add nodes with bound parameters (`add`), move consumers from one node to
another (`redirect`), change a node in place (`replace`, `set_args`), delete
nodes (`remove`, `prune`) and take the result with `block()`; the formatter
prints it. Node ids are treated as opaque labels (ints or names): new nodes
get integer ids that no existing id spells, so a new `10` never collides with
a node named `"10"` (and are strings where every existing id is one). Edge lines keep their place and their comments, so the
operand order of `concat` and `multiply` is never disturbed.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Hashable, Iterable, Optional, Union

from nader.compiler.passes.symbolic import Poly
from nader.dsl.expr import BinOp, Num, Sym, TupleValue, Value
from nader.dsl.ir import Arg, Block, Edge, Node
from nader.dsl.ops import REGISTRY, Group, Op
from nader.dsl.line_checks import bind

from .errors import CannotApply

NodeId = Hashable  # an int today; a name such as `conv_1` where the front end allows it

ArgValue = Union[Value, int, float, tuple]


def size_value(size: Poly) -> Optional[Value]:
    """`size` written as a layer parameter: a positive integer, or `k*C` as `C`, `C*2`, `C/4`, `C*3/2`.

    None for anything else (sizes in `B`, `H`, `W`, or rounded atoms), which no operator writes.
    """
    constant = size.int_constant()
    if constant is not None:
        return Num(constant) if constant > 0 else None
    if len(size.terms) != 1:
        return None
    ((mono, coeff),) = size.terms.items()
    if mono != (("C", 1),) or coeff <= 0:
        return None
    expr: Value = Sym("C")
    if coeff.numerator != 1:
        expr = BinOp("*", expr, Num(coeff.numerator))
    if coeff.denominator != 1:
        expr = BinOp("/", expr, Num(coeff.denominator))
    return expr


def size_arg(size: Optional[Poly]) -> Value:
    """`size_value`, or CannotApply when the size cannot be written as a layer parameter."""
    value = size_value(size) if size is not None else None
    if value is None:
        raise CannotApply(f"the size `{size}` is not a positive multiple of C or a positive integer")
    return value


def _value(value: ArgValue) -> Value:
    if isinstance(value, bool):
        raise TypeError("booleans are not values of the block language")
    if isinstance(value, (int, float)):
        return Num(value)
    if isinstance(value, tuple) and not isinstance(value, (Num, Sym, BinOp, TupleValue)):
        return TupleValue(tuple(_value(v) for v in value))
    return value


def _bound(op_name: str, args: tuple[Arg, ...]) -> dict:
    opdef = REGISTRY[Op(op_name)]
    problems: list = []
    params = bind(opdef, args, problems)
    if problems:  # a bug in an operator, never user input
        raise ValueError(f"bad arguments for {op_name}: {'; '.join(p.message for p in problems)}")
    return params


def make_node(node_id: NodeId, op: Op, *positional: ArgValue, **keywords: ArgValue) -> Node:
    """A node with its parameters bound (defaults filled in), as the parser would build it."""
    args = tuple(Arg(None, _value(v)) for v in positional) + tuple(Arg(k, _value(v)) for k, v in keywords.items())
    return Node(node_id, op.value, args, params=_bound(op.value, args))


def _id_text(node_id: NodeId) -> str:
    return str(node_id)


class Rewrite:
    """A mutable copy of a block's nodes and edges; `block()` returns the rewritten Block."""

    def __init__(self, block: Block):
        self.parent = block
        self.nodes: list[Node] = list(block.nodes)
        self.edges: list[Edge] = list(block.edges)
        taken = {_id_text(n.id) for n in block.nodes}
        taken |= {_id_text(i) for e in block.edges for i in (*e.sources, e.target)}
        self._taken = taken
        self._next = 1 + max((int(t) for t in taken if t.isdigit()), default=-1)
        # Where every id is a string (a front end that keeps ids as text), new ids are text too.
        self._as_text = bool(block.nodes) and all(isinstance(n.id, str) for n in block.nodes)

    # -- ids and lookups ---------------------------------------------------------------
    def fresh_id(self) -> NodeId:
        """An integer id that no existing id spells (as text where all ids are text)."""
        while str(self._next) in self._taken:
            self._next += 1
        new = self._next
        self._taken.add(str(new))
        self._next += 1
        return str(new) if self._as_text else new

    def node(self, node_id: NodeId) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def inputs_of(self, node_id: NodeId) -> list[NodeId]:
        return [s for e in self.edges if e.target == node_id for s in e.sources]

    def consumers_of(self, node_id: NodeId) -> list[NodeId]:
        return [e.target for e in self.edges for s in e.sources if s == node_id]

    # -- edits ---------------------------------------------------------------------------
    def add(self, op: Op, inputs: Iterable[NodeId], *positional: ArgValue, **keywords: ArgValue) -> NodeId:
        """A new node fed by `inputs` (one edge line each, in operand order); returns its id."""
        new = self.fresh_id()
        self.nodes.append(make_node(new, op, *positional, **keywords))
        for source in inputs:
            self.edges.append(Edge((source,), new))
        return new

    def redirect(self, old: NodeId, new: NodeId, targets: Iterable[NodeId]) -> None:
        """Make the wires `old -> t` read `new -> t` for each t in `targets`, in place (operand order kept)."""
        wanted = set(targets)
        for k, e in enumerate(self.edges):
            if e.target in wanted and old in e.sources:
                self.edges[k] = replace(e, sources=tuple(new if s == old else s for s in e.sources))

    def replace(self, node_id: NodeId, op: Op, *positional: ArgValue, **keywords: ArgValue) -> None:
        """Give node `node_id` another operation and arguments; its id, edges and comments stay."""
        fresh = make_node(node_id, op, *positional, **keywords)
        for k, n in enumerate(self.nodes):
            if n.id == node_id:
                self.nodes[k] = replace(n, op_name=fresh.op_name, args=fresh.args, params=fresh.params)

    def set_args(self, node_id: NodeId, **keywords: ArgValue) -> None:
        """Set parameters of a node, rewriting the argument where it is written, else adding `name=value`."""
        for k, n in enumerate(self.nodes):
            if n.id != node_id:
                continue
            args = list(n.args)
            for name, value in keywords.items():
                written = n.arg(name)
                if written is None:
                    args.append(Arg(name, _value(value)))
                else:  # keep the keyword or positional form it was written in
                    args[next(i for i, a in enumerate(args) if a is written)] = Arg(written.name, _value(value))
            args_t = tuple(args)
            self.nodes[k] = replace(n, args=args_t, params=_bound(n.op_name, args_t))

    def remove(self, node_id: NodeId) -> None:
        """Delete a node and every wire from or to it."""
        self.nodes = [n for n in self.nodes if n.id != node_id]
        kept: list[Edge] = []
        for e in self.edges:
            if e.target == node_id:
                continue
            if node_id in e.sources:
                sources = tuple(s for s in e.sources if s != node_id)
                if not sources:
                    continue
                e = replace(e, sources=sources)
            kept.append(e)
        self.edges = kept

    def prune(self) -> list[NodeId]:
        """Delete the nodes that no longer lead to the output; returns their ids."""
        sinks = [n.id for n in self.nodes if n.op in Group.SINK]
        feeding: dict[NodeId, list[NodeId]] = {}
        for e in self.edges:
            feeding.setdefault(e.target, []).extend(e.sources)
        alive = set(sinks)
        stack = list(sinks)
        while stack:
            for s in feeding.get(stack.pop(), ()):
                if s not in alive:
                    alive.add(s)
                    stack.append(s)
        dead = [n.id for n in self.nodes if n.id not in alive and n.op not in Group.SOURCE]
        for node_id in dead:
            self.remove(node_id)
        return dead

    def block(self) -> Block:
        b = self.parent
        return Block(b.name, tuple(self.nodes), tuple(self.edges), b.leading_comments, b.header_comment,
                     b.trailing_comments)
