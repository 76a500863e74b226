"""Re-point edges into an input terminal or out of `output`, and feed an `output` that has no input (NAD205)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Group, Op

from ..kind import FixKind

KIND = FixKind("re-point-terminal-edge", UNSAFE, ("NAD205",),
               "Send an edge out of `output` from `output`'s input instead; drop an edge into an input; feed a bare `output`.", """
    `1->5` (out of `output`) becomes `X->5`, X being what feeds `output`; an edge into `input`
    is removed; an `output` without input gets one from the last node nothing reads.
""", order=10)


def candidates(ctx, diagnostic):
    block = ctx.block
    out = ctx.output_node()
    for index, edge in enumerate(block.edges):
        if edge.span.line != diagnostic.span.line:
            continue
        for position, source in enumerate(edge.sources):
            if out is not None and source == out.id:
                for feeder in ctx.inputs(out.id)[:1]:
                    edit = ctx.editor()
                    edit.set_source(index, position, feeder)
                    yield edit.fix(KIND.name, f"take the edge {source}->{edge.target} from node {feeder} "
                                              f"(what feeds `output`)", UNSAFE)
        target = block.node_map().get(edge.target)
        if target is not None and target.op in Group.SOURCE:
            for position in range(len(edge.sources)):
                edit = ctx.editor()
                edit.remove_wire(index, position)
                yield edit.fix(KIND.name, f"remove the edge {edge.sources[position]}->{edge.target} into "
                                          f"`{target.op_name}`", UNSAFE)
    if out is not None and diagnostic.span.line == out.span.line and not ctx.inputs(out.id):
        unread = [n for n in block.nodes if n.op is not Op.OUTPUT and n.op not in Group.SOURCE
                  and not ctx.consumers(n.id)]
        for node in reversed(unread[-3:]):
            edit = ctx.editor()
            edit.add_wire(node.id, out.id)
            yield edit.fix(KIND.name, f"feed `output` from node {node.id}, which nothing reads", UNSAFE)
