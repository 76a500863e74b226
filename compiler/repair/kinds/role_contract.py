"""Give a block the output its role promises: channels with a 1x1 `Conv2d`, sizes with strides (NAD311)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import output_feed, with_arg

KIND = FixKind("role-contract", UNSAFE, ("NAD311",),
               "Match the role's output shape: a 1x1 `Conv2d` to its channels, the stride a stem or downsample needs.", """
    A base block that ends with `9*C/8` channels gets `Conv2d(out_channels=C,kernel_size=1,stride=1)`
    before `output`; a downsample block that keeps the size gets stride 2 on its first strided
    layer (or a 1x1 `Conv2d` with stride 2, or an `AvgPool2d`, whichever verifies with the
    fewest nodes); a block that shrinks too much gets stride 1 where it strides.
""", order=20)


def candidates(ctx, diagnostic):
    feed = output_feed(ctx)
    if feed is None:
        return
    out, last, have, want = feed
    if have is None or want is None or len(have) != 4 or len(want) != 4:
        return
    channels_wrong = have[1] != want[1]
    ratio = have[2] // want[2] if want[2] and have[2] % want[2] == 0 else None
    width = ctx.output_channels()
    if have[2] != want[2] and ratio:
        # strides on the way: set the first layer that takes one (in file order) to the ratio
        for node in ctx.block.nodes:
            arg = node.arg("stride") if node.opdef is not None else None
            if node.opdef is None or not any(p.name == "stride" for p in node.opdef.params):
                continue
            if node.id not in ctx.ancestors(out.id):
                continue
            edit = ctx.editor()
            edit.set_node(node, with_arg(node, "stride", str(ratio)))
            yield edit.fix(KIND.name, f"set stride {ratio} on node {node.id} (`{node.op_name}`) for the "
                                      f"{ctx.report.role} contract", UNSAFE)
            if arg is None or str(arg.value) == "1":
                break
    if have[2] != want[2] and not ratio and want[2] and want[2] > have[2]:
        strided = [n for n in ctx.block.nodes if n.id in ctx.ancestors(out.id) and n.opdef is not None
                   and n.arg("stride") is not None and str(n.arg("stride").value) not in ("1", "(1,1)")]
        if strided:
            edit = ctx.editor()
            for n in strided:
                edit.set_node(n, with_arg(n, "stride", "1"))
            yield edit.fix(KIND.name, f"set stride 1 on node{'s' if len(strided) > 1 else ''} "
                                      f"{', '.join(str(n.id) for n in strided)} for the {ctx.report.role} contract", UNSAFE)
    if channels_wrong or (have[2] != want[2] and ratio):
        edit = ctx.editor()
        index, slot = edit.wires_into(out.id)[0]
        stride = ratio or 1
        new = edit.insert_between(index, slot, f"Conv2d(out_channels={width},kernel_size=1,stride={stride})")
        yield edit.fix(KIND.name, f"project node {last} to {width} channels"
                                  f"{f' at stride {stride}' if stride > 1 else ''} with a 1x1 `Conv2d` (new node {new}) "
                                  f"before `output`", UNSAFE)
    if not channels_wrong and ratio and ratio > 1:
        edit = ctx.editor()
        index, slot = edit.wires_into(out.id)[0]
        new = edit.insert_between(index, slot, f"AvgPool2d(kernel_size={ratio},stride={ratio})")
        yield edit.fix(KIND.name, f"pool node {last} by {ratio} (new node {new}) before `output`", UNSAFE)
