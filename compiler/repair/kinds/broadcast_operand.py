"""Tile a `(B,C,1,1)` operand of `concat` to the others' spatial size with `repeat` (NAD302)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Op

from ..kind import FixKind
from ._common import node_of, operands_of

KIND = FixKind("broadcast-operand", UNSAFE, ("NAD302",),
               "Tile an operand of `concat` that is 1 where the others have `H` or `W` with `repeat(1,1,H,W)`.", """
    A global-context branch (`AdaptiveAvgPool2d(output_size=1)`, a 1x1 `Conv2d`) concatenated with
    the feature map: `concat` does not broadcast, so the `(B,C,1,1)` operand is tiled to
    `(B,C,H,W)` by a new `repeat(1,1,H,W)` node (what PyTorch's `expand` does, with the registry's
    operation). One node added; `concat-to-gate` is preferred where the branch is a gate.
""", order=20)

#: How a 4-d tensor's spatial sizes are written, by axis.
_SPATIAL = {2: "H", 3: "W"}


def candidates(ctx, diagnostic):
    node = node_of(ctx, diagnostic, Op.CONCAT)
    if node is None:
        return
    operands, shapes = operands_of(ctx, node)
    if any(s is None or len(s) != 4 for s in shapes):
        return
    edit = ctx.editor()
    tiled = []
    for position, (operand, shape) in enumerate(zip(operands, shapes)):
        repeats = []
        for k in range(4):
            others = {s[k] for s in shapes if s[k] != 1}
            if shape[k] == 1 and others and k in _SPATIAL and len(others) == 1 and _spatial(ctx, operands, shapes, k):
                repeats.append(_SPATIAL[k])
            else:
                repeats.append("1")
        if repeats == ["1"] * 4:
            continue
        index, slot = edit.wires_into(node.id)[position]
        tiled.append((operand, edit.insert_between(index, slot, f"repeat({','.join(repeats)})")))
    if tiled:
        yield edit.fix(KIND.name, "tile " + ", ".join(f"node {o} (new `repeat` node {n})" for o, n in tiled)
                       + f" to the size of the other inputs of node {node.id} (`concat`)", UNSAFE)


def _spatial(ctx, operands, shapes, axis: int) -> bool:
    """Whether the operands that are not 1 on `axis` have the block's own size there, `H` or `W`."""
    for operand, shape in zip(operands, shapes):
        if shape[axis] != 1:
            written = str(ctx.shape(operand)[axis])
            if written not in ("H", "W"):
                return False
    return True
