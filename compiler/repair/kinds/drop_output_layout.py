"""Remove a `permute` or `reshape` that turns a block's right output into a wrong one (NAD311)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Op

from ..kind import FixKind
from ._common import output_feed, sizes

KIND = FixKind("drop-output-layout", UNSAFE, ("NAD311",),
               "Remove the `permute` or `reshape` before `output` whose input already has the shape the role wants.", """
    A ConvNeXt block that goes back to channels-first twice ends with `(B,H,C,W)`: the last
    `permute(0,3,1,2)` undoes a layout that was already right. Where the node feeding `output`
    only moves axes (`permute`, `reshape`) and its input has the role's output shape, it goes and
    its input feeds `output`. One node removed.
""", order=10)

_LAYOUT = {Op.PERMUTE, Op.RESHAPE}


def candidates(ctx, diagnostic):
    feed = output_feed(ctx)
    if feed is None:
        return
    out, last, _, want = feed
    node = ctx.node(last)
    inputs = ctx.inputs(last)
    if node is None or node.op not in _LAYOUT or len(inputs) != 1 or len(ctx.consumers(last)) != 1:
        return
    if sizes(ctx.shape(inputs[0])) != want:
        return
    edit = ctx.editor()
    for index, position in edit.wires_from(last):
        edit.set_source(index, position, inputs[0])
    edit.drop_node(node)
    yield edit.fix(KIND.name, f"remove node {last} (`{node.op_name}`): node {inputs[0]} already has the shape "
                              f"`output` wants", UNSAFE)
