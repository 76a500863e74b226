"""Merge a one-input operation's inputs with `concat` and a 1x1 `Conv2d` back to the channels (NAD207)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import overfed_node

KIND = FixKind("merge-inputs-concat", UNSAFE, ("NAD207", "NAD205"),
               "Concatenate the inputs of a one-input operation and project them back with a 1x1 `Conv2d`.", """
    Where the branches' shapes do not add (different channels), they are concatenated on the
    channel axis and a 1x1 `Conv2d` brings the channels back to the first branch's (or to the
    role's output channels before `output`). Two nodes: `merge-inputs-add` is preferred where
    it verifies.
""", order=20)


def candidates(ctx, diagnostic):
    node = overfed_node(ctx, diagnostic)
    if node is None:
        return
    sources = ctx.inputs(node.id)
    widths = [ctx.output_channels()] if node.op_name == "output" else []
    widths += [w for w in (ctx.channels(sources[0]), "C") if w is not None]
    for width in dict.fromkeys(widths):
        edit = ctx.editor()
        wires = edit.wires_into(node.id)
        merge = edit.add_node("concat(dim=1)")
        project = edit.add_node(f"Conv2d(out_channels={width},kernel_size=1,stride=1)")
        for index, position in reversed(wires):
            edit.retarget(index, position, merge)
        edit.add_wire(merge, project)
        edit.add_wire(project, node.id)
        yield edit.fix(KIND.name, f"concatenate the {len(wires)} inputs of node {node.id} (`{node.op_name}`) "
                                  f"(new node {merge}) and project them to {width} channels (new node {project})", UNSAFE)
