"""Delete what a model wrote of a block twice: node lines defining an id again, repeated edges, edges to nodes
never defined (NAD201, NAD202 and the errors they cause)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ...passes.structure import graph_facts
from ..kind import FixKind
from ._common import removal_gains_nothing
from .undefined_node import written_undefined

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
    if not ctx.memo("repair.restatement-may", _may_offer):
        return
    found = _scan(ctx)
    if found is not None and (found[0] or (found[2] and found[3])):
        if found[0] or not removal_gains_nothing(ctx, found[1]):
            yield cleanup(ctx)  # else a kind of one of the two makes the same fix


def _may_offer(ctx) -> bool:
    return may_offer(graph_facts(ctx.block))


def may_offer(facts) -> bool:
    """Whether `candidates` may offer the cleanup, read off the structure pass's facts without a walk: only where
    a node line defines an id again, or where edges name undefined nodes (some wire has an undefined end) and
    some node is fed twice by one node (a repeat; wires to and from undefined nodes count too, so this may say
    yes where `_scan` then says no). Most blocks searched are neither, and `_scan` (and the written ids it
    reads) is then not needed for this kind."""
    return not facts.unique_ids or not facts.defined_ends and any(len(set(s)) != len(s) for s in facts.inputs.values())


def restatement(ctx):
    """The block's cleanup, or None where nothing is stated twice and no edge names an undefined node (what
    `repair_text` tries on a file with more errors than it takes on)."""
    return cleanup(ctx) if _scan(ctx) is not None else None


def _scan(ctx):
    """(node lines defining an id again, the wires to remove as (edge index, position), how many repeat an
    earlier one, how many name an undefined node), or None where there is nothing to remove or an undefined
    node is written on a line that did not parse (mend that line first). Once per block."""
    return ctx.memo("repair.restatement", _scan_block)


def _scan_block(ctx):
    block = ctx.block
    facts = graph_facts(block)
    if facts.unique_ids and facts.defined_ends and all(len(set(s)) == len(s) for s in facts.inputs.values()):
        return None  # no id defined again, no wire to an undefined node, none repeated: most blocks, at C speed
    if not facts.defined_ends and written_undefined(ctx):
        return None  # a wire names an undefined node (the walk would count it) written on a line that did not parse
    defined = block.node_map()
    again = [] if facts.unique_ids else [n for n in block.nodes if defined[n.id] is not n]
    seen, wires, repeated, undefined = set(), [], 0, 0
    for index, edge in enumerate(block.edges):
        target = edge.target
        known = target in defined
        for position, source in enumerate(edge.sources):
            if not known or source not in defined:
                wires.append((index, position))
                undefined += 1
            elif (source, target) in seen:
                wires.append((index, position))
                repeated += 1
            else:
                seen.add((source, target))
    return (again, wires, repeated, undefined) if again or wires else None


def cleanup(ctx):
    """The fix of `_scan`'s findings (built once per block)."""
    return ctx.memo("repair.restatement-fix", _cleanup)


def _cleanup(ctx):
    again, wires, repeated, undefined = _scan(ctx)
    edit = ctx.editor()
    for index, position in reversed(wires):
        edit.remove_wire(index, position)
    for node in again:
        edit.node_lines[node.span.line] = None
        edit.removed += 1
    parts = [f"{len(again)} node line{'s' if len(again) != 1 else ''} defining an id again" if again else "",
             f"{repeated} repeated edge{'s' if repeated != 1 else ''}" if repeated else "",
             f"{undefined} edge{'s' if undefined != 1 else ''} to undefined nodes" if undefined else ""]
    return edit.fix(KIND.name, "keep the block's first statement: remove " + ", ".join(p for p in parts if p), UNSAFE)
