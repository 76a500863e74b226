"""Add a missing `input` or `output` node and wire it in (NAD204)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Group, Op

from ..kind import FixKind

KIND = FixKind("connect-terminal", UNSAFE, ("NAD204",),
               "Add the missing `input` (feeding the nodes that have no input) or `output` (fed by the last node nothing reads).", """
    A block without `output` gets one, fed by the last node whose result nothing reads; a block
    without `input` gets one, feeding every node that has no input. (The diagnostic's own fix,
    `add-terminal`, only adds the node line.)
""", order=10)


def candidates(ctx, diagnostic):
    for terminal in ("output", "input"):
        if f"no `{terminal}` node" in diagnostic.message:
            break
    else:
        return
    block = ctx.block
    if terminal == "output":
        unread = [n for n in block.nodes if n.op not in Group.SOURCE and n.op is not Op.OUTPUT and not ctx.consumers(n.id)]
        for node in reversed(unread[-3:]):
            edit = ctx.editor()
            new = edit.add_node("output")
            edit.add_wire(node.id, new)
            yield edit.fix(KIND.name, f"add `output` (node {new}) fed by node {node.id}, which nothing reads", UNSAFE)
        return
    starved = [n for n in block.nodes if n.opdef is not None and n.op not in Group.SOURCE and not ctx.inputs(n.id)]
    if starved:
        edit = ctx.editor()
        new = edit.add_node("input")
        for node in starved:
            edit.add_wire(new, node.id)
        yield edit.fix(KIND.name, f"add `input` (node {new}) feeding node{'s' if len(starved) > 1 else ''} "
                                  f"{', '.join(str(n.id) for n in starved)}", UNSAFE)
