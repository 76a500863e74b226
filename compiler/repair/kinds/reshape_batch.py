"""Keep the batch axis in `reshape` (NAD305)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind

KIND = FixKind("reshape-batch", UNSAFE, ("NAD305",),
               "Write the batch axis `B` first in a `reshape` that leaves it out or misplaces it.", """
    `reshape(C)` of a `(B,C,1,1)` tensor holds `C` elements where its input holds `B*C`: it
    becomes `reshape(B,C)`. Where the first size is something else, it is replaced by `B`, or
    the sizes after it become `-1`.
""", order=10)


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.op_name != "reshape":
        return
    # every reshape of the block that drops the batch axis: they usually come in pairs (flatten, restore)
    edit = ctx.editor()
    fixed = []
    for other in ctx.block.nodes:
        if other.op_name != "reshape":
            continue
        sizes = [str(a.value) for a in other.args if a.name is None]
        if not sizes or sizes[0] == "B":
            continue
        sizes = ["B", *sizes[1:]] if sizes[0] in ("1", "-1") else ["B", *sizes]
        edit.set_node(other, f"reshape({','.join(sizes)})")
        fixed.append(other.id)
    if fixed:
        yield edit.fix(KIND.name, f"keep the batch axis `B` first in the `reshape` of node{'s' if len(fixed) > 1 else ''} "
                                  f"{', '.join(map(str, fixed))}", UNSAFE)
    edit = ctx.editor()
    edit.set_node(node, "reshape(B,-1)")
    yield edit.fix(KIND.name, f"flatten in node {node.id}: `reshape(B,-1)`", UNSAFE)
