"""Multiply a gate that reaches `output` with the nearest full-size tensor before it (NAD311)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import output_feed, sizes

KIND = FixKind("gate-output", UNSAFE, ("NAD311",),
               "Where a block outputs a gate, `(B,C,1,1)` or `(B,C,H,1)`, multiply it with the nearest full-size tensor before it.", """
    A squeeze-and-excitation or attention block that forgot its last step ends with the gate
    itself: `AdaptiveAvgPool2d`, a bottleneck, `Sigmoid`, then `output`. The gate broadcasts to the
    shape the role wants, so a new `Mul` takes the nearest earlier node of that shape (the feature
    map the gate was computed from) and the gate, and feeds `output`. One node added.

    ```
    9:Sigmoid        ->   9:Sigmoid
    9->1                  12:Mul
                          9->12
                          4->12
                          12->1
    ```
""", order=10)

#: Earlier full-size tensors tried, nearest first.
MOST_ANCESTORS = 3


def candidates(ctx, diagnostic):
    feed = output_feed(ctx)
    if feed is None:
        return
    out, gate, have, want = feed
    if have is None or want is None or len(have) != len(want) or have == want:
        return
    if not all(h == w or h == 1 for h, w in zip(have, want)):
        return  # not a gate of the wanted shape: role-contract's
    full = [a for a in ctx.ancestors(gate) if sizes(ctx.shape(a)) == want][:MOST_ANCESTORS]
    for source in full:
        edit = ctx.editor()
        index, slot = edit.wires_into(out.id)[0]
        mul = edit.add_node("Mul")
        edit.retarget(index, slot, mul)
        edit.add_wire(source, mul)
        edit.add_wire(mul, out.id)
        yield edit.fix(KIND.name, f"multiply the gate, node {gate}, with node {source} (new `Mul` node {mul}) "
                                  f"before `output`", UNSAFE)
