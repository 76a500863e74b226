"""Remove a layer whose width would need `H`, `W` or `B` (NAD210)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind

KIND = FixKind("drop-size-bound-layer", UNSAFE, ("NAD210",),
               "Remove a one-input layer whose width is written with `H`, `W` or `B`; its input feeds its consumers.", """
    `Linear(out_channels=H*W)` on the `H*W` axis of a token-mixing branch keeps that axis' size:
    its width cannot be written (layer parameters never use `H`, `W`, `B`), and writing `C` there
    (`channel-symbol`) changes the shape the rest of the branch expects. Removed, the branch keeps
    its shapes. Unsafe: the layer's mixing is lost.
""", order=25)


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None or node.opdef.arity.max != 1:
        return
    inputs = ctx.inputs(node.id)
    if len(inputs) != 1:
        return
    edit = ctx.editor()
    for index, position in edit.wires_from(node.id):
        edit.set_source(index, position, inputs[0])
    edit.drop_node(node)
    yield edit.fix(KIND.name, f"remove node {node.id} (`{node.op_name}`, whose width uses a size symbol); "
                              f"node {inputs[0]} feeds its consumers", UNSAFE)
