"""Drop an edge that names an undefined node, or point it at the node it most likely means (NAD202)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from . import FixKind

KIND = FixKind("drop-undefined-edge", UNSAFE, ("NAD202",), "Remove an edge's end that names no node.", """
    `3->9` where no node 9 is defined: the wire goes (the output then gets what feeds it from
    another fix if needed).
""", order=30)


def candidates(ctx, diagnostic):
    defined = ctx.block.node_map()
    for index, edge in enumerate(ctx.block.edges):
        if edge.span.line != diagnostic.span.line:
            continue
        edit = ctx.editor()
        if edge.target not in defined:
            edit.edge_sources[index] = []
            yield edit.fix(KIND.name, f"remove the edge {edge.source_text()}: node {edge.target} is not defined", UNSAFE)
            return
        missing = [j for j, s in enumerate(edge.sources) if s not in defined]
        for position in reversed(missing):
            edit.remove_wire(index, position)
        if missing:
            names = ", ".join(str(edge.sources[j]) for j in missing)
            yield edit.fix(KIND.name, f"remove the wire{'s' if len(missing) > 1 else ''} from undefined node "
                                      f"{names} into {edge.target}", UNSAFE)
        return
