"""Match a merge's spatial sizes: drop the stride that shrank one operand, or pool the other (NAD301, NAD302)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Group

from ..kind import FixKind
from ._common import cannot_meet, merge_operands, rule_shape, with_arg

KIND = FixKind("match-spatial", UNSAFE, ("NAD301", "NAD302"),
               "Make a merge's operands the same size: stride 1 where one branch downsamples, or pool the other.", """
    When one operand of `Add`, `Mul` or `concat` is smaller (a stride or pooling on its branch
    only), the strides on that branch become 1 (no node added; a pooling written without `stride`,
    which strides by its kernel size, gets `stride=1`); else the larger operand gets an
    `AvgPool2d` with the ratio as kernel and stride.
""", order=15)


def candidates(ctx, diagnostic):
    found = merge_operands(ctx, diagnostic)
    if found is None:
        return
    merge, operands, shapes = found
    largest = max(s[2] for s in shapes)
    smallest = min(s[2] for s in shapes)
    if largest == smallest or smallest <= 0:
        return
    # 1. stride 1 on the strided nodes only the smaller operands' branches have
    big_ancestry = set()
    for o, s in zip(operands, shapes):
        if s[2] == largest:
            big_ancestry |= set(ctx.ancestors(o)) | {o}
    edit = ctx.editor()
    changed = []
    for o, s in zip(operands, shapes):
        if s[2] == largest:
            continue
        for a in [o, *ctx.ancestors(o)]:
            node = ctx.node(a)
            if a in big_ancestry or node is None or a in changed:
                continue
            arg = node.arg("stride")
            if arg is not None and str(arg.value) not in ("1", "(1,1)") or arg is None and _pools_by_default(node):
                edit.set_node(node, with_arg(node, "stride", "1"))
                changed.append(a)
    if changed and not cannot_meet(ctx, diagnostic, merge, (ctx.shape(o) for o, s in zip(operands, shapes)
                                                            if s[2] == largest), changed):
        yield edit.fix(KIND.name, f"set stride 1 on node{'s' if len(changed) > 1 else ''} "
                                  f"{', '.join(map(str, changed))} so the inputs of node {merge.id} keep one size", UNSAFE)
    # 2. pool the larger operands down
    pooling = f"AvgPool2d(kernel_size={largest // smallest},stride={largest // smallest})"
    if largest % smallest == 0 and not cannot_meet(ctx, diagnostic, merge, (
            ctx.shape(o) if s[2] != largest else rule_shape(ctx, pooling, ctx.shape(o)) for o, s in zip(operands, shapes))):
        ratio = largest // smallest
        edit = ctx.editor()
        pooled = []
        for position, (o, s) in enumerate(zip(operands, shapes)):
            if s[2] == largest:
                index, slot = edit.wires_into(merge.id)[position]
                pooled.append(edit.insert_between(index, slot, pooling))
        yield edit.fix(KIND.name, f"pool the larger input{'s' if len(pooled) > 1 else ''} of node {merge.id} by {ratio} "
                                  f"(new node{'s' if len(pooled) > 1 else ''} {', '.join(map(str, pooled))})", UNSAFE)


def _pools_by_default(node) -> bool:
    """A window pooling without `stride`, whose stride is then its kernel size (`MaxPool2d(kernel_size=3)`)."""
    kernel = node.arg("kernel_size") if node.op in Group.WINDOW_POOLING else None
    return kernel is not None and str(kernel.value) not in ("1", "(1,1)")
