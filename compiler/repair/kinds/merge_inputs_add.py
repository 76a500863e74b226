"""Merge the inputs of a one-input operation with a new `Add` (NAD207; `output` fed twice, NAD205)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import overfed_node

KIND = FixKind("merge-inputs-add", UNSAFE, ("NAD207", "NAD205"),
               "Sum the inputs of a one-input operation with a new `Add` node and feed it the sum.", """
    A layer, an activation or `output` fed by several branches gets one `Add` node that takes
    all of them; the operation takes the `Add`. Offered only where the branches' shapes add
    (else `merge-inputs-concat` applies).

    ```
    4:BN          ->   4:BN
    2->4               9:Add
    3->4               2->9
                       3->9
                       9->4
    ```
""", order=10)


def candidates(ctx, diagnostic):
    node = overfed_node(ctx, diagnostic)
    if node is None:
        return
    edit = ctx.editor()
    wires = edit.wires_into(node.id)
    merge = edit.add_node("Add")
    for index, position in reversed(wires):
        edit.retarget(index, position, merge)
    edit.add_wire(merge, node.id)
    yield edit.fix(KIND.name, f"merge the {len(wires)} inputs of node {node.id} (`{node.op_name}`) with a new "
                              f"`Add` node {merge}", UNSAFE)
