"""Replace a channel size that is never positive, never whole or absurdly large by a plain width (NAD313-NAD315)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import ParamKind

from ..kind import FixKind
from ._common import with_arg

KIND = FixKind("size-expression", UNSAFE, ("NAD313", "NAD314", "NAD315"),
               "Write a channel size that cannot be built (`C-C`, `C/(2*C)`, `C*C`) as the input's width or `C`.", """
    `Conv2d(out_channels=C-C)` is never positive, `C/(2*C)` never whole, `C*C*64` absurdly large:
    the parameter becomes the input's channel count (or `C`); `groups` goes back to one group.
""", order=30)


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return
    col = diagnostic.span.col
    sizes = [p for p in node.opdef.params if p.kind is ParamKind.SIZE and node.arg(p.name) is not None]
    pointed = [p for p in sizes if node.arg(p.name).span.col <= col < node.arg(p.name).span.end_col]
    # NAD313 points at the node: the output width is what grows
    for param in pointed or [p for p in sizes if p.name == "out_channels"]:
        arg = node.arg(param.name)
        if param.name == "groups":
            edit = ctx.editor()
            edit.set_node(node, with_arg(node, "groups", None))
            yield edit.fix(KIND.name, f"remove `groups={arg.value}` from node {node.id} (one group)", UNSAFE)
            return
        width = next((ctx.channels(s) for s in ctx.inputs(node.id) if ctx.channels(s)), None)
        for value in dict.fromkeys(v for v in (width, "C") if v):
            if value == str(arg.value) or not arg.name:
                continue
            edit = ctx.editor()
            edit.set_node(node, with_arg(node, param.name, value))
            yield edit.fix(KIND.name, f"set `{param.name}` of node {node.id} to `{value}` (was `{arg.value}`)", UNSAFE)
        return
