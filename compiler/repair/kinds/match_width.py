"""Give the layer that made a merge's operand the other operands' width (NAD301)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Op

from ..kind import FixKind
from ._common import merge_operands, with_arg

KIND = FixKind("match-width", UNSAFE, ("NAD301",),
               "Set `out_channels` of the convolution that made a merge's mismatched operand to the other operands' width.", """
    `Add` of a `2*C`-channel branch and the `C`-channel input: the `Conv2d` that made `2*C` (found
    back through layers that keep the width: `BN`, activations, pooling, `DropPath`) gets
    `out_channels=C`. No node is added, where `match-channels` adds a 1x1 `Conv2d`; at equal
    size the width change is preferred, and `nadc fix --list` shows the other.
""", order=15)

#: Layers walked through on the way back: each keeps its input's channels.
_KEEPS_WIDTH = {Op.BN, Op.RELU, Op.GELU, Op.SIGMOID, Op.DROP_PATH, Op.AVG_POOL2D, Op.MAX_POOL2D,
                Op.ADAPTIVE_AVG_POOL2D, Op.ADAPTIVE_MAX_POOL2D}


def candidates(ctx, diagnostic):
    found = merge_operands(ctx, diagnostic)
    if found is None:
        return
    merge, operands, shapes = found
    done = set()
    widths = [ctx.channels(o) for o in operands]  # each operand's once (a merge may have many)
    # the wider operands first: narrowing is the usual intent (a bottleneck's expansion where the input is C)
    for position in sorted(range(len(operands)), key=lambda p: -shapes[p][1]):
        for k, other in enumerate(operands):
            width = widths[k]
            if k == position or shapes[k][1] == shapes[position][1] or width is None:
                continue
            layer = _producer(ctx, operands[position])
            if layer is None or (layer.id, width) in done:
                continue
            done.add((layer.id, width))
            edit = ctx.editor()
            edit.set_node(layer, with_arg(layer, "out_channels", width))
            yield edit.fix(KIND.name, f"set `out_channels` of node {layer.id} to `{width}` (was "
                                      f"`{layer.arg('out_channels').value}`) so node {merge.id} (`{merge.op_name}`) "
                                      f"adds equal widths", UNSAFE)


def _producer(ctx, node_id):
    """The `Conv2d` whose width reaches `node_id` through width-keeping layers, if any."""
    seen = set()
    while node_id not in seen:
        seen.add(node_id)
        node = ctx.node(node_id)
        if node is None or node.opdef is None:
            return None
        if node.op is Op.CONV2D and node.arg("out_channels") is not None and node.arg("out_channels").name:
            return node
        inputs = ctx.inputs(node_id)
        if node.op not in _KEEPS_WIDTH or len(inputs) != 1:
            return None
        node_id = inputs[0]
    return None
