"""Remove a merge (`concat`, `Add`, `Mul`) that has a single input (NAD207)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import underfed_merge

KIND = FixKind("remove-single-input-merge", UNSAFE, ("NAD207",),
               "Remove a `concat`, `Add` or `Mul` with one input; its input feeds its consumers.", """
    A merge of one tensor is that tensor (`concat` of one) or a mistake (`Add` of one). The node
    goes and its consumers take its input directly. Unsafe: where a second input was meant,
    `move-input` may be the repair wanted, and is preferred when it verifies (no node removed).
""", order=30)


def candidates(ctx, diagnostic):
    node = underfed_merge(ctx, diagnostic)
    if node is None:
        return
    (source,) = ctx.inputs(node.id)
    edit = ctx.editor()
    outgoing = edit.wires_from(node.id)
    for index, position in outgoing:
        edit.set_source(index, position, source)
    edit.drop_node(node)
    yield edit.fix(KIND.name, f"remove node {node.id} (`{node.op_name}` of one input); node {source} feeds its consumers",
                   UNSAFE)
