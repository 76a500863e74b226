"""Multiply where a `concat` joins a feature map and a gate of one channel count (NAD302)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Group, Op

from ..kind import FixKind
from ._common import node_of, operands_of

KIND = FixKind("concat-to-gate", UNSAFE, ("NAD302",),
               "Write `Mul` for a `concat` of a feature map and a gate that broadcasts to it, `(B,C,1,1)` with `(B,C,H,W)`.", """
    Squeeze-and-excitation written with `concat`: the gate `(B,C,1,1)` (a `Sigmoid` or `softmax`
    after global pooling) is joined to the feature map `(B,C,H,W)` it was computed from, which
    `concat` cannot do. Applied, as a gate is, the two are multiplied: the node becomes `Mul`. No
    node is added; its consumers then see `C` channels, not `2*C`. A branch that is no gate is
    tiled instead (`broadcast-operand`).
""", order=10)


def candidates(ctx, diagnostic):
    node = node_of(ctx, diagnostic, Op.CONCAT)
    if node is None:
        return
    operands, shapes = operands_of(ctx, node)
    if len(operands) != 2 or any(s is None for s in shapes) or len(shapes[0]) != len(shapes[1]):
        return
    big, small = sorted(shapes, key=lambda s: -_count(s))
    if big == small or not all(b == s or s == 1 for b, s in zip(big, small)):
        return
    gate = operands[shapes.index(small)]
    if ctx.op(gate) not in Group.GATE:
        return  # a context branch, not a gate: broadcast-operand tiles it
    edit = ctx.editor()
    edit.set_node(node, "Mul")
    yield edit.fix(KIND.name, f"multiply in node {node.id} instead of concatenating: node {gate} is a gate "
                              f"of the other input", UNSAFE)


def _count(shape) -> int:
    total = 1
    for s in shape:
        total *= s
    return total
