"""Helpers the fix kinds share."""
from __future__ import annotations

from typing import Optional

from nader.dsl.ir import Node
from nader.dsl.ops import Op

from ...passes.shape_types import evaluate_shape


def overfed_node(ctx, diagnostic) -> Optional[Node]:
    """The node a NAD207/NAD205 diagnostic says gets more inputs than its one."""
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return None
    count = len(ctx.inputs(node.id))
    if node.op is Op.OUTPUT:
        return node if count > 1 else None
    arity = node.opdef.arity
    return node if arity.max == 1 and count > 1 else None


def underfed_merge(ctx, diagnostic) -> Optional[Node]:
    """The node a NAD207 diagnostic says is a merge (`Add`, `concat`, ...) with a single input."""
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return None
    return node if node.opdef.arity.min >= 2 and len(ctx.inputs(node.id)) == 1 else None



#: Sizes at which shapes are compared and ratios measured (any generic point works: the
#: engine verifies every candidate symbolically).
PROBE = {"B": 2, "C": 48, "dim": 96, "H": 96, "W": 96}


#: Shapes at the probe sizes, by shape (its sizes are interned): the kinds ask for the same ones often.
_SIZES: dict[tuple, Optional[tuple]] = {}


def sizes(shape) -> Optional[tuple]:
    """A symbolic shape at the probe sizes; None when it cannot be evaluated."""
    if shape is None:
        return None
    found = _SIZES.get(shape, _SIZES)
    if found is not _SIZES:
        return found
    try:
        found = tuple(evaluate_shape(shape, PROBE))
    except (ArithmeticError, KeyError, TypeError, ValueError):
        found = None
    if len(_SIZES) > 4096:
        _SIZES.clear()
    _SIZES[shape] = found
    return found


def with_arg(node: Node, name: str, value: Optional[str]) -> str:
    """`node`'s operation text with parameter `name` set to `value` (None: removed)."""
    args, done = [], False
    written = node.arg(name)
    for a in node.args:
        if a is written:
            done = True
            if value is not None:
                args.append(f"{a.name}={value}" if a.name else value)
        else:
            args.append(str(a))
    if not done and value is not None:
        args.append(f"{name}={value}")
    return f"{node.op_name}({','.join(args)})" if args else node.op_name


def merge_node(ctx, diagnostic) -> Optional[Node]:
    """The node (with two or more inputs) a shape diagnostic points at."""
    node = ctx.node_at(diagnostic)
    return node if node is not None and len(ctx.inputs(node.id)) >= 2 else None


def merge_operands(ctx, diagnostic) -> Optional[tuple[Node, list, list]]:
    """(the merge a shape diagnostic points at, its operands, their 4-d sizes at the probe), or None where
    one of them is not a 4-d tensor of known shape."""
    merge = merge_node(ctx, diagnostic)
    if merge is None:
        return None
    operands, shapes = operands_of(ctx, merge)
    return None if any(s is None or len(s) != 4 for s in shapes) else (merge, operands, shapes)


def node_of(ctx, diagnostic, op: Op) -> Optional[Node]:
    """The node the diagnostic points at, where it is an `op`."""
    node = ctx.node_at(diagnostic)
    return node if node is not None and node.op is op else None


def operands_of(ctx, node: Node) -> tuple[list, list]:
    """A node's inputs, in operand order, and their sizes at the probe (None where unknown)."""
    operands = ctx.inputs(node.id)
    return operands, [sizes(ctx.shape(o)) for o in operands]


def output_feed(ctx):
    """(`output`, the one node feeding it, that node's sizes and the role's wanted sizes at the probe, either
    None where unknown), or None where `output` is missing or not fed exactly once."""
    out = ctx.output_node()
    if out is None or len(ctx.inputs(out.id)) != 1:
        return None
    (last,) = ctx.inputs(out.id)
    return out, last, sizes(ctx.shape(last)), sizes(ctx.output_shape())
