"""Delete a node whose result never reaches `output`, when it carries an error (safe)."""
from __future__ import annotations

from nader.dsl.diagnostics import SAFE
from nader.dsl.ops import Group

from ..kind import FixKind

KIND = FixKind("drop-dead-node", SAFE, ("*",),
               "Delete a dead node (its result never reaches `output`) that has an error.", """
    Compiling drops dead nodes (NAD206), so deleting one keeps the architecture; an error on a
    dead node (a mis-shaped branch nobody reads) goes with it. Not where a node lacks an input:
    the dead node may be what was meant to feed it (`5->4` written for `4->5`).
""", order=1)


def candidates(ctx, diagnostic):
    dead = ctx.dead()
    if not dead:
        return  # most blocks (asked first, once a block: this kind answers every error)
    node = ctx.node_at(diagnostic)
    if node is None or node.id not in dead:
        return
    if any(d.is_error and (d.code.code.startswith("NAD1") or d.code.code == "NAD202") for d in ctx.report.diagnostics):
        return  # a line that did not parse, or an edge to a missing node: the node may only look dead
    if any(n.id != node.id and n.opdef is not None and n.op not in Group.SOURCE
           and len(ctx.inputs(n.id)) < n.opdef.arity.min for n in ctx.block.nodes):
        return  # another node lacks an input: the dead one may be what was meant to feed it (an edge backwards)
    edit = ctx.editor()
    edit.drop_node(node)
    yield edit.fix(KIND.name, f"delete node {node.id} (`{node.op_name}`): its result never reaches `output`", SAFE)
