"""Turn round an edge written backwards: from a node that has no input into one that has too many (NAD207)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Group

from ..kind import FixKind

KIND = FixKind("reverse-edge", UNSAFE, ("NAD207",),
               "Write `b->a` for an edge `a->b` whose source has no input while its target has one too many.", """
    `5->4` where `4->5` was meant: node 5 (a `Conv2d`) then has no input and node 4 (a `ReLU`)
    two. Turned round, each has one. No node is added.
""", order=5)


def candidates(ctx, diagnostic):
    if not ctx.memo("repair.reverse_edge", turnable):
        return  # no node without an input, or none with one too many: most blocks with a NAD207
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return
    pairs = []
    if _starved(ctx, node.id):
        pairs = [(node.id, t) for t in dict.fromkeys(ctx.consumers(node.id)) if _overfed(ctx, t)]
    elif _overfed(ctx, node.id):
        pairs = [(s, node.id) for s in dict.fromkeys(ctx.inputs(node.id)) if _starved(ctx, s)]
    for source, target in pairs:
        edit = ctx.editor()
        for index, position in reversed(edit.wires_into(target)):
            if edit.sources(index)[position] == source:
                edit.remove_wire(index, position)
                break
        edit.add_wire(target, source)
        yield edit.fix(KIND.name, f"turn the edge {source}->{target} round: {target}->{source}", UNSAFE)


def turnable(ctx) -> bool:
    """Whether the block has both a node without an input and one with too many (an edge between two such can
    be turned round): once a block, where the kind is asked for each of its NAD207."""
    inputs, starved, overfed = ctx.block.input_map(), False, False
    for node in ctx.block.node_map().values():  # `_starved` and `_overfed` of each, written out: one walk
        opdef = node.opdef
        if opdef is None:
            continue
        count = len(inputs.get(node.id, ()))
        if not count:
            starved = starved or node.op not in Group.SOURCE and opdef.arity.min >= 1
        else:
            most = 1 if node.op in Group.SINK else opdef.arity.max
            overfed = overfed or most is not None and count > most
    return starved and overfed


def _starved(ctx, node_id) -> bool:
    node = ctx.node(node_id)
    return node is not None and node.opdef is not None and node.op not in Group.SOURCE \
        and node.opdef.arity.min >= 1 and not ctx.inputs(node_id)


def _overfed(ctx, node_id) -> bool:
    node = ctx.node(node_id)
    if node is None or node.opdef is None:
        return False
    most = 1 if node.op in Group.SINK else node.opdef.arity.max
    return most is not None and len(ctx.inputs(node_id)) > most
