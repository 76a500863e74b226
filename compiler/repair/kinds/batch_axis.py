"""Keep the batch axis first and alone in the `reshape` before a layer that would learn over it (NAD310)."""
from __future__ import annotations

import re

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Op

from ..kind import FixKind

KIND = FixKind("keep-batch-axis", UNSAFE, ("NAD310",),
               "Write `B` as the first size, alone, of the `reshape` that folded the batch into the axis a layer learns over.", """
    `reshape(B*C)` or `reshape(H*W,B*C)` before a `Linear` makes its weights depend on the batch
    size. The nearest `reshape` before the layer gets `B` first and alone: `reshape(B,C)`,
    `reshape(B,H*W,C)`; one with no `B` gets it in place of a leading `1` or `-1`, or before its
    sizes. No node is added.
""", order=10)

#: Reshapes looked at before the layer, nearest first.
MOST_RESHAPES = 3
_PRODUCT = re.compile(r"\w+(?:\*\w+)*")


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return
    reshapes = [a for a in ctx.ancestors(node.id) if ctx.op(a) is Op.RESHAPE][:MOST_RESHAPES]
    for reshape in reshapes:
        sizes = batch_first([str(a.value) for a in ctx.node(reshape).args if a.name is None])
        if sizes is None:
            continue
        edit = ctx.editor()
        edit.set_node(ctx.node(reshape), f"reshape({','.join(sizes)})")
        yield edit.fix(KIND.name, f"keep the batch axis first and alone in node {reshape}: `reshape({','.join(sizes)})`",
                       UNSAFE)


def batch_first(sizes: list[str]):
    """`sizes` with `B` first and alone, or None where they have it so already (or it cannot be moved)."""
    if not sizes or sizes[0] == "B":
        return None
    for k, size in enumerate(sizes):
        factors = size.split("*") if _PRODUCT.fullmatch(size) else []
        if "B" in factors:
            factors.remove("B")
            rest = [*sizes[:k], *(["*".join(factors)] if factors else []), *sizes[k + 1:]]
            return ["B", *rest]
    if any("B" in re.findall(r"\w+", size) for size in sizes):
        return None  # `B` inside an expression this does not take apart
    if sizes[0] == "1":
        return ["B", *sizes[1:]]
    return ["B", "-1", *sizes[1:]] if sizes[0] == "-1" else ["B", *sizes]
