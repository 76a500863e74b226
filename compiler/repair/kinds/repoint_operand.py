"""Feed a merge an earlier tensor of the right shape instead of a mis-shaped operand (NAD301, NAD302)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import cannot_meet, merge_node, sizes

KIND = FixKind("re-point-operand", UNSAFE, ("NAD301", "NAD302"),
               "Take a merge's mis-shaped operand from the nearest earlier node whose shape fits.", """
    A residual `Add` fed from inside a `permute`d region, or a `concat` fed a branch before its
    pooling, gets its operand from the nearest ancestor whose shape matches the other operands.
    No node is added.
""", order=25)

MOST_ANCESTORS = 4  # in all: each is a verification `nadc verify` pays for; the nearest fit best


def candidates(ctx, diagnostic):
    merge = merge_node(ctx, diagnostic)
    if merge is None:
        return
    operands = ctx.inputs(merge.id)
    below = set(ctx.descendants(merge.id)) | {merge.id}
    concat = diagnostic.code.code == "NAD302"
    tried = 0
    shapes = [ctx.shape(o) for o in operands]  # each operand's once (a merge may have many)
    probed = [sizes(shape) for shape in shapes]
    for position, operand in enumerate(operands):
        others = [s for k, s in enumerate(probed) if k != position and s is not None]
        if not others:
            continue
        hopeless = None  # whether the other operands alone fail the merge (asked once a candidate is found)
        kept = [shape for k, shape in enumerate(shapes) if k != position]
        for ancestor in ctx.ancestors(operand):
            if tried >= MOST_ANCESTORS:
                return  # nothing more is offered
            if ancestor in below or ancestor in operands:
                continue
            shape = sizes(ctx.shape(ancestor))
            if shape is None:
                continue
            if not any(_fits(shape, other, concat) for other in others):
                continue
            tried += 1  # a candidate left out counts too: the later operands get the ancestors they got
            if hopeless is None:
                hopeless = cannot_meet(ctx, diagnostic, merge, kept)
            if hopeless:
                continue
            edit = ctx.editor()
            wires = edit.wires_into(merge.id)
            index, slot = wires[position]
            edit.set_source(index, slot, ancestor)
            yield edit.fix(KIND.name, f"feed node {merge.id} (`{merge.op_name}`) from node {ancestor} instead of "
                                      f"node {operand}, whose shape does not fit", UNSAFE)


def _fits(shape, other, concat: bool) -> bool:
    if len(shape) != len(other):
        return False
    if concat:
        return all(a == b for k, (a, b) in enumerate(zip(shape, other)) if k != 1)
    return shape == other
