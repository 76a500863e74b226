"""Remove edges that repeat an earlier edge, where the repeats overfeed a node (NAD207, NAD205)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import overfed_node, removal_gains_nothing

KIND = FixKind("drop-repeated-edges", UNSAFE, ("NAD207", "NAD205"),
               "Remove every edge that repeats an earlier one (`8->1` written four times), where a node gets too many inputs so.", """
    A model caught in a loop writes its edge lines again and again, and a layer or `output` then
    gets the same input several times. Every wire that repeats an earlier wire (same source, same
    target) goes, also into merges, whose repeated inputs came from the same loop. No node is
    added. Unsafe: `Add` of a tensor with itself is a repeat too.
""", order=3)


def candidates(ctx, diagnostic):
    node = overfed_node(ctx, diagnostic)
    if node is None or len(set(ctx.inputs(node.id))) == len(ctx.inputs(node.id)):
        return
    edit = ctx.editor()
    seen, dropped = set(), []
    for index, edge in enumerate(ctx.block.edges):
        for position in reversed(range(len(edge.sources))):
            wire = (edge.sources[position], edge.target)
            if wire in seen or wire in ((s, edge.target) for s in edge.sources[:position]):
                edit.remove_wire(index, position)
                dropped.append((index, position))
        seen.update((s, edge.target) for s in edge.sources)
    if dropped and not removal_gains_nothing(ctx, dropped):
        yield edit.fix(KIND.name, f"remove {len(dropped)} edge{'s' if len(dropped) > 1 else ''} repeating earlier ones "
                                  f"(node {node.id} got {len(ctx.inputs(node.id))} inputs so)", UNSAFE)
