"""Make `groups` divide the channels: depthwise where it meant that, else 1 (NAD316)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import with_arg

KIND = FixKind("fit-groups", UNSAFE, ("NAD316",), "Set `groups` to a value that divides the channels.", """
    `Conv2d(out_channels=C*2,groups=3)` cannot split `C` channels in 3 groups for every `C`: the
    fix tries `groups` equal to the input channels (depthwise), then removes it (one group).
""", order=20)


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.arg("groups") is None:
        return
    width = next((ctx.channels(s) for s in ctx.inputs(node.id) if ctx.channels(s)), None)
    for value in dict.fromkeys([v for v in (width, "C") if v]):
        edit = ctx.editor()
        edit.set_node(node, with_arg(node, "groups", value))
        yield edit.fix(KIND.name, f"set `groups={value}` on node {node.id}", UNSAFE)
    edit = ctx.editor()
    edit.set_node(node, with_arg(node, "groups", None))
    yield edit.fix(KIND.name, f"remove `groups` from node {node.id} (one group)", UNSAFE)
