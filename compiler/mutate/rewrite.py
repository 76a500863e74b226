"""A mutation as a rewrite on the interpreter: `Rewrite`, a `Transformer` with a rule per node.

Operators never build block text. An operator gives the nodes it changes a rule each (by node
id) and runs one `Rewrite` of the parent: the walk copies every other node, and a rule, called
with the node and the ids its inputs now have, keeps it (`keep`, as another operation with
`replaced` or other arguments with `with_args`, or reading other inputs), adds nodes with bound
parameters (`add`) and returns the id the node's consumers read from then on (a new gate, say), or
drops it by returning another id (its consumers read that instead). `prune=True` deletes what then
no longer leads to the output. The formatter prints the result. Node ids are treated as opaque
labels (ints or names): new nodes get integer ids that no existing id spells, so a new `10` never
collides with a node named `"10"` (and are strings where every existing id is one). Edge lines keep
their place and their comments, so the operand order of `concat` and `multiply` is never disturbed.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Hashable, Mapping, Optional, Union

from nader.compiler.passes.transformer import Transformer
from nader.compiler.passes.symbolic import Poly
from nader.dsl.expr import BinOp, Num, Sym, TupleValue, Value
from nader.dsl.ir import Arg, Block, Node
from nader.dsl.ops import REGISTRY, Op
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


def replaced(node: Node, op: Op, *positional: ArgValue, **keywords: ArgValue) -> Node:
    """`node` with another operation and arguments; its id and comments stay."""
    fresh = make_node(node.id, op, *positional, **keywords)
    return replace(node, op_name=fresh.op_name, args=fresh.args, params=fresh.params)


def with_args(node: Node, **keywords: ArgValue) -> Node:
    """`node` with parameters set: the argument rewritten where it is written (keyword or positional,
    as it was), else `name=value` added."""
    args = list(node.args)
    for name, value in keywords.items():
        written = node.arg(name)
        if written is None:
            args.append(Arg(name, _value(value)))
        else:
            args[next(i for i, a in enumerate(args) if a is written)] = Arg(written.name, _value(value))
    args_t = tuple(args)
    return replace(node, args=args_t, params=_bound(node.op_name, args_t))


#: A rule: (the rewrite, the node, the ids its inputs now have) -> the id its consumers read.
Rule = Callable[["Rewrite", Node, tuple], Any]


class Rewrite(Transformer):
    """One walk of the parent block: the nodes with a rule (by id) are rewritten by it, the others
    copied; `add` makes a new node of the registry's operation with its parameters bound."""

    __slots__ = ()

    def __init__(self, block: Block, rules: Mapping[NodeId, Rule] = {}, *, prune: bool = False):
        super().__init__(block, rules, prune=prune)

    def add(self, op: Op, inputs, *positional: ArgValue, **keywords: ArgValue) -> NodeId:
        """A new node fed by `inputs` (one edge line each, in operand order); returns its id."""
        return self.emit(make_node(self.fresh_id(), op, *positional, **keywords), inputs)


def rewrite(block: Block, rules: Mapping[NodeId, Rule], *, prune: bool = False) -> Block:
    """The block `Rewrite(block, rules)` makes."""
    return Rewrite(block, rules, prune=prune).run()
