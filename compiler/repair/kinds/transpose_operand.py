"""Transpose an operand of `multiply` so the matrix product fits (NAD303)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Op

from ..kind import FixKind
from ._common import node_of, operands_of

KIND = FixKind("transpose-operand", UNSAFE, ("NAD303",),
               "Swap the last two axes of an operand of `multiply` with a new `permute`, where the product then fits.", """
    Attention written as `multiply` of queries and keys both `(B,C,N)`: the product needs one of
    them transposed, `(B,N,C)` by `(B,C,N)`. A `permute` swapping the last two axes goes before the
    first operand (an `N x N` map, as attention means), or else before the second. One node added.
""", order=15)


def candidates(ctx, diagnostic):
    node = node_of(ctx, diagnostic, Op.MATMUL)
    if node is None:
        return
    operands, shapes = operands_of(ctx, node)
    if len(operands) != 2 or any(s is None or len(s) < 2 for s in shapes):
        return
    for position in (0, 1):
        a, b = list(shapes[0]), list(shapes[1])
        swapped = a if position == 0 else b
        swapped[-1], swapped[-2] = swapped[-2], swapped[-1]
        if a[-1] != b[-2] and b[-1] != a[-2]:
            continue  # the product fits in neither order
        rank = len(shapes[position])
        dims = ",".join(map(str, [*range(rank - 2), rank - 1, rank - 2]))
        edit = ctx.editor()
        index, slot = edit.wires_into(node.id)[position]
        new = edit.insert_between(index, slot, f"permute({dims})")
        yield edit.fix(KIND.name, f"transpose node {operands[position]} (new `permute` node {new}) before node "
                                  f"{node.id} (`multiply`)", UNSAFE)
