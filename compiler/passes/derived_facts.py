"""The analyses of a repair's candidate block taken from those of the block it was changed from.

`nadc verify`'s suggestions verify several candidate fixes per error (compiler/repair/region.py), each the
block with a few lines changed; the block was verified first, so its graph facts, input map, topological
order and dead nodes are known. A candidate takes what of them its change leaves alone, rather than walk
its nodes and wires again: each is what it would compute itself (tests/test_repair_shortcuts.py compares
them on every candidate of the corpora and of mutated blocks). Only the two commonest changes are worth
it, measured: rewiring alone, and rewriting node lines in place (a change that deletes or adds nodes
costs as much to derive as to compute).
"""
from __future__ import annotations

from itertools import chain

from nader.dsl.ir import Block

from .structure import _SINK, _SOURCE, GraphFacts, _line_facts, dead_nodes, graph_facts


def share_graph(block: Block, parent: Block) -> None:
    """Give `block` the analyses of `parent`'s graph, where it has the parent's wires (the same edge tuple)
    and node ids in order, the same one of them an `output`: its input map, topological order, dead nodes."""
    block.share_wires(parent)
    dead = dead_nodes(parent)
    block.analysis("dead_nodes", lambda _: dead)


def rewire(block: Block, parent: Block, rewired: set) -> None:
    """Give `block` what it can have of `parent`'s analyses, where it has the parent's nodes (the same node
    tuple) and the same wires but those into the `rewired` targets: the facts of its nodes, and of the
    arities of those outside `rewired`; its topological order where the parent's wires all run forward."""
    facts = graph_facts(parent)
    if not facts.unique_ids:
        return  # an arity per node, not per id: computed whole
    nodes = facts.nodes
    block.analysis("node_map", lambda _: nodes)
    inputs = block.input_map()
    feeding = set(chain.from_iterable(inputs.values()))
    misfits = [i for i in facts.misfits if i not in rewired]  # the others' inputs are the parent's
    for i in rewired:
        n = nodes.get(i)
        if n is not None and n.opdef is not None:
            _, _, _, kind, least, most = _line_facts(n)
            count = len(inputs.get(i, ()))
            if kind is not _SOURCE and kind is not _SINK and (count < least or (most is not None and count > most)):
                misfits.append(i)  # `_compute_facts`'s test
    defined = nodes.keys()
    block.analysis("graph_facts", lambda _: GraphFacts(
        nodes, inputs, feeding, facts.sources, facts.sinks, True, inputs.keys() <= defined and feeding <= defined,
        not misfits, misfits, facts.parameters_fit, facts.layers, facts.floordiv))
    block.rewired(parent, rewired)
