"""Remove an argument the operation does not take, or gives twice (NAD105, NAD106, NAD107)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind

KIND = FixKind("drop-argument", UNSAFE, ("NAD105", "NAD106", "NAD107"),
               "Remove an argument the operation has no parameter for, or one given twice.", """
    `ReLU(inplace=True)` becomes `ReLU`, `Conv2d(out_channels=C,kernel_size=3,padding=1)` loses
    `padding` (the language pads to keep sizes). Unsafe: where the argument meant something
    (`bias=False`), that meaning is lost; `close-parameter-name` runs first where a name is close.
""", order=40)


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None:
        return
    col = diagnostic.span.col
    hit = [a for a in node.args if a.span.col <= col < max(a.span.end_col, a.span.col + 1)]
    if not hit:
        hit = [a for a in node.args if a.name_span.col == col]
    for arg in hit[:1]:
        kept = [str(a) for a in node.args if a is not arg]
        edit = ctx.editor()
        edit.set_node(node, f"{node.op_name}({','.join(kept)})" if kept else node.op_name)
        yield edit.fix(KIND.name, f"remove the argument `{arg}` from node {node.id} (`{node.op_name}`)", UNSAFE)
