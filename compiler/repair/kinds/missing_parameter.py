"""Add a required parameter with the usual value (NAD208)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import with_arg

KIND = FixKind("add-missing-parameter", UNSAFE, ("NAD208",), "Add a required parameter with its most common value.", """
    `Conv2d(kernel_size=3)` gets `out_channels=C` (the input's channels, or the role's output
    width); a missing `kernel_size` is 3 (1 for `Linear`-like layers does not apply), `output_size` 1.
""", order=20)

#: The values tried for a missing parameter, by name, most common first.
USUAL = {
    "out_channels": ("C", "dim"),
    "kernel_size": ("3", "1"),
    "output_size": ("1",),
    "stride": ("1",),
    "dim": ("1",),
    "prob": ("0.1",),
}


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return
    for param in node.opdef.params:
        if not param.required or param.name in node.params or param.variadic:
            continue
        values = list(USUAL.get(param.name, ()))
        if param.name == "out_channels":
            width = next((ctx.channels(s) for s in ctx.inputs(node.id) if ctx.channels(s)), None)
            values = list(dict.fromkeys([*(v for v in [width] if v), *values]))
        for value in values:
            edit = ctx.editor()
            edit.set_node(node, with_arg(node, param.name, value))
            yield edit.fix(KIND.name, f"add `{param.name}={value}` to node {node.id} (`{node.op_name}`)", UNSAFE)
        return
