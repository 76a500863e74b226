"""Drop the wires of an edge that names an undefined node (NAD202), unless a line that did not parse defines it."""
from __future__ import annotations

import re

from nader.dsl.diagnostics import UNSAFE

from ...passes.structure import graph_facts
from ..kind import FixKind
from ._common import removal_gains_nothing

KIND = FixKind("drop-undefined-edge", UNSAFE, ("NAD202",), "Remove an edge's end that names no node.", """
    `3->9` where no node 9 is defined: the wire goes (the output then gets what feeds it from
    another fix if needed). Where edges name several undefined nodes (a model that wrote edges on
    and on), one candidate removes them all.
""", order=30)

#: A node line's id, parsed or not: after a line break, the line's leading non-word characters, then the id and
#: a colon (one search over the whole text, in C, from each `\n`; `[^\w\n]` keeps each match on its line).
_NODE_LINE = re.compile(r"\n[^\w\n]*([A-Za-z0-9_]+)[ \t]*:")


def candidates(ctx, diagnostic):
    defined = ctx.block.node_map()
    written = written_undefined(ctx)
    if not written and diagnostic is next((d for d in ctx.report.diagnostics if d.code.code == "NAD202"), None):
        found = _every_undefined(ctx)  # once a block: the same fix for each of its NAD202
        if found is not None:
            yield found
    for index, edge in ctx.memo("repair.first_edges", _first_edges).get(diagnostic.span.line, ()):
        if written and any(i in written for i in (*edge.sources, edge.target)):
            return  # the node is written on a line that does not parse: mend that line instead
        edit = ctx.editor()
        if edge.target not in defined:
            if not removal_gains_nothing(ctx, [(index, j) for j in range(len(edge.sources))]):
                edit.edge_sources[index] = []
                yield edit.fix(KIND.name, f"remove the edge {edge.source_text()}: node {edge.target} is not defined",
                               UNSAFE)
            return
        missing = [j for j, s in enumerate(edge.sources) if s not in defined]
        if removal_gains_nothing(ctx, [(index, j) for j in missing]):
            return
        for position in reversed(missing):
            edit.remove_wire(index, position)
        if missing:
            names = ", ".join(str(edge.sources[j]) for j in missing)
            yield edit.fix(KIND.name, f"remove the wire{'s' if len(missing) > 1 else ''} from undefined node "
                                      f"{names} into {edge.target}", UNSAFE)
        return


def _first_edges(ctx) -> dict:
    """[(index, edge)] of the first edge on each line (a chain is several edges on one line), by line; read
    backwards, so that the first written wins."""
    edges = ctx.block.edges
    return {edges[index].span.line: [(index, edges[index])] for index in range(len(edges) - 1, -1, -1)}


#: The last file's (lines, ids written): every block of a file asks for them.
_WRITTEN: list = [None, set()]


def written_ids(ctx) -> set:
    """The ids of the file's node lines, those that did not parse too (as text)."""
    if _WRITTEN[0] is not ctx.lines:
        _WRITTEN[:] = ctx.lines, set(_NODE_LINE.findall("\n" + "\n".join(ctx.lines)))
    return _WRITTEN[1]


def written_undefined(ctx) -> frozenset:
    """The ids edges of the block name that no node of it defines but a line of the file writes (one that did not
    parse): once a block, for each of its NAD202 and each kind."""
    return ctx.memo("repair.written_undefined", _written_undefined)


def _written_undefined(ctx) -> frozenset:
    facts = graph_facts(ctx.block)
    if facts.defined_ends:
        return frozenset()
    undefined = (facts.feeding | facts.inputs.keys()) - facts.nodes.keys()  # every wire's ends, as sets
    written = written_ids(ctx)
    return frozenset(i for i in undefined if str(i) in written)


def _every_undefined(ctx):
    """One fix removing every wire that names an undefined node, where there are several (the caller asks only
    where no undefined node is written on a line that did not parse; None where there are fewer)."""
    defined = ctx.block.node_map()
    wires = [(index, position) for index, edge in enumerate(ctx.block.edges) for position, source in
             enumerate(edge.sources) if source not in defined or edge.target not in defined]
    if len(wires) < 2 or removal_gains_nothing(ctx, wires):
        return None
    edit = ctx.editor()
    for index, edge in enumerate(ctx.block.edges):
        if edge.target not in defined:
            edit.edge_sources[index] = []
            continue
        for position in reversed(range(len(edge.sources))):
            if edge.sources[position] not in defined:
                edit.remove_wire(index, position)
    return edit.fix(KIND.name, f"remove the {len(wires)} wires that name undefined nodes", UNSAFE)
