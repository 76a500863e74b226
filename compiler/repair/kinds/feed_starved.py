"""Feed a layer that has no input: from the branch nothing reads before it, or from the block's input (NAD207)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Group

from ..kind import FixKind

KIND = FixKind("feed-starved-node", UNSAFE, ("NAD207",),
               "Give a one-input operation that has no input the nearest earlier node nothing reads, or the block's input.", """
    A model that leaves out `0->2` (or the edge between two steps of a chain) leaves a layer with
    no input and, usually, a node before it whose result nothing reads. The layer gets that node
    (the nearest such one before it in the file), else the block's input terminal: one
    candidate. No node is added.
""", order=8)

def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None or node.op in Group.SOURCE or node.opdef.arity.max != 1:
        return
    if ctx.inputs(node.id):
        return
    below = set(ctx.descendants(node.id)) | {node.id}
    order = [n.id for n in ctx.block.nodes]
    earlier = order[:order.index(node.id)]
    consumers = ctx.block.consumer_map()
    unread = (i for i in reversed(earlier) if i not in below and not consumers.get(i)
              and ctx.node(i).opdef is not None and ctx.node(i).op not in Group.SINK and ctx.node(i).op not in Group.SOURCE)
    sources = (n.id for n in ctx.block.nodes if n.op in Group.SOURCE)
    # one candidate (`nadc verify` pays a verification for each): the nearest unread node, else the first input
    source = next(unread, None)
    source = next(sources, None) if source is None else source
    if source is not None:
        edit = ctx.editor()
        edit.add_wire(source, node.id)
        yield edit.fix(KIND.name, f"feed node {node.id} (`{node.op_name}`) from node {source}", UNSAFE)
