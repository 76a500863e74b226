"""A 1x1 `Conv2d` on a merge's operand to give it the other operand's channels (NAD301)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import cannot_meet, merge_node, rule_shape, sizes

KIND = FixKind("match-channels", UNSAFE, ("NAD301",),
               "Insert a 1x1 `Conv2d` on an operand of `Add`/`Mul` so that its channels match the others'.", """
    `Add` of a `C`-channel and a `C*4`-channel tensor gets `Conv2d(out_channels=C,kernel_size=1,stride=1)`
    on the wider one (or the narrower one, whichever verifies with one node). Where the sizes
    differ too, the convolution takes the stride that matches them.
""", order=20)


def candidates(ctx, diagnostic):
    merge = merge_node(ctx, diagnostic)
    if merge is None:
        return
    operands = ctx.inputs(merge.id)
    probed = [sizes(ctx.shape(o)) for o in operands]  # each operand's once (a merge may have many)
    widths = [ctx.channels(o) for o in operands]
    for position, operand in enumerate(operands):
        mine = probed[position]
        for k, other in enumerate(operands):
            theirs, width = probed[k], widths[k]
            if k == position or mine is None or theirs is None or width is None or len(mine) != 4 or len(theirs) != 4:
                continue
            if mine[1] == theirs[1]:
                continue
            stride = mine[2] // theirs[2] if theirs[2] and mine[2] % theirs[2] == 0 else 1
            projection = f"Conv2d(out_channels={width},kernel_size=1,stride={stride})"
            if cannot_meet(ctx, diagnostic, merge, [*(ctx.shape(o) for j, o in enumerate(operands) if j != position),
                                                    rule_shape(ctx, projection, ctx.shape(operand))]):
                break  # the merge fails with the projection too
            edit = ctx.editor()
            index, slot = edit.wires_into(merge.id)[position]
            new = edit.insert_between(index, slot, projection)
            yield edit.fix(KIND.name, f"project node {operand} to {width} channels with a 1x1 `Conv2d` (new node {new}) "
                                      f"before node {merge.id} (`{merge.op_name}`)", UNSAFE)
            break
