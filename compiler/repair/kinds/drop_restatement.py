"""Delete what a model wrote of a block twice: node lines defining an id again, repeated edges, edges to nodes
never defined (NAD201, NAD202 and the errors they cause)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from .undefined_node import written_ids

KIND = FixKind("drop-restatement", UNSAFE, ("NAD201", "NAD202", "NAD203", "NAD204", "NAD205", "NAD207"),
               "Delete what a block states twice: a node line defining an id again, an edge written again, and with "
               "them every edge naming a node never defined.", """
    A small model asked to change a parent often restates it and goes on: the parent's nodes and
    edges again (ids defined twice, edges repeated, nodes fed ten times), then edges to ids it never
    defines. One candidate keeps the first statement: every node line that defines an id already
    defined goes (edges name the first definition), every edge that repeats an earlier one goes,
    and every edge naming an undefined node goes (not one whose node is written on a line that did
    not parse: mend that line instead). Offered where a node line goes, or where edges both repeat
    and name undefined nodes (one of those alone is `drop-repeated-edges` or `drop-undefined-edge`).
    A file with more errors than a repair takes on (40) is repaired all the same where, once each
    block's first statement is kept, no more are left.

    ```
    3:BN          ->   3:BN
    4:ReLU             4:ReLU
    3:BN               3->4
    3->4
    3->4
    4->17
    ```
""", order=2)


def candidates(ctx, diagnostic):
    found = restatement(ctx)
    if found is not None and found[1]:
        yield found[0]


def restatement(ctx):
    """(the block's cleanup, whether it does more than `drop-repeated-edges` or `drop-undefined-edge` alone:
    it deletes a node line, or both repeated edges and edges to undefined nodes), or None where nothing is
    stated twice and no edge names an undefined node."""
    return ctx.memo("repair.restatement", _restatement)


def _restatement(ctx):
    block = ctx.block
    defined = block.node_map()
    again = [n for n in block.nodes if defined[n.id] is not n]
    written = written_ids(ctx)
    edit = ctx.editor()
    seen, repeated, undefined = set(), 0, 0
    for index, edge in enumerate(block.edges):
        target_missing = edge.target not in defined
        for position in reversed(range(len(edge.sources))):
            source = edge.sources[position]
            wire = (source, edge.target)
            missing = [i for i in wire if i not in defined]
            if any(str(i) in written for i in missing):
                return None  # a node written on a line that did not parse: mend that line first
            if target_missing or missing:
                edit.remove_wire(index, position)
                undefined += 1
            elif wire in seen or wire in ((s, edge.target) for s in edge.sources[:position]):
                edit.remove_wire(index, position)
                repeated += 1
        seen.update((s, edge.target) for s in edge.sources)
    if not (again or repeated or undefined):
        return None
    for node in again:
        edit.node_lines[node.span.line] = None
        edit.removed += 1
    parts = [f"{len(again)} node line{'s' if len(again) != 1 else ''} defining an id again" if again else "",
             f"{repeated} repeated edge{'s' if repeated != 1 else ''}" if repeated else "",
             f"{undefined} edge{'s' if undefined != 1 else ''} to undefined nodes" if undefined else ""]
    fix = edit.fix(KIND.name, "keep the block's first statement: remove " + ", ".join(p for p in parts if p), UNSAFE)
    return fix, bool(again or (repeated and undefined))  # else a kind of one of the two makes the same fix
