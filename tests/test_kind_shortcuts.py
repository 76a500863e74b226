"""The fix kinds' per-block shortcuts (issue 39, point 3) answer as the full walks they spare.

A kind asked for each error of a block may first ask, once a block, whether it can offer anything there
(`drop_restatement.may_offer`, `reverse_edge.turnable`), or read a block-wide table built in one pass
(`undefined_node`'s written undefined ids and first edges by line). Each is compared here with the walk it
replaces, on the committed corpora and on mutated blocks: a shortcut that said "nothing" where the walk finds
something would drop a fix from `nadc verify`, `nadc fix` and `nadc fix --list`.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from test_repair_speed import CORPORA
from text_strategies import mutated_texts
from nader.compiler.passes.structure import graph_facts
from nader.compiler.passes.verify import verify_program
from nader.compiler.repair.context import RepairContext
from nader.compiler.repair.kinds import drop_restatement, reverse_edge, undefined_node
from nader.dsl.parser import parse


def _contexts(text: str):
    lines = text.split("\n")
    reports, _ = verify_program(parse(text), stem_stride=None)
    return [RepairContext(lines, report, True) for report in reports if not report.ok]


def _restatement_offered(ctx) -> bool:
    """`drop_restatement.candidates`' own test on the full scan (before its `removal_gains_nothing`)."""
    found = drop_restatement._scan(ctx)
    return found is not None and bool(found[0] or (found[2] and found[3]))


def _turnable_pairs(ctx) -> list:
    """Every (source, target) `reverse_edge` could turn round, node by node as its candidates look."""
    pairs = []
    for node in ctx.block.nodes:
        if reverse_edge._starved(ctx, node.id):
            pairs += [(node.id, t) for t in ctx.consumers(node.id) if reverse_edge._overfed(ctx, t)]
        elif reverse_edge._overfed(ctx, node.id):
            pairs += [(s, node.id) for s in ctx.inputs(node.id) if reverse_edge._starved(ctx, s)]
    return pairs


def _written_undefined_walk(ctx) -> frozenset:
    defined = ctx.block.node_map()
    undefined = {i for edge in ctx.block.edges for i in (*edge.sources, edge.target) if i not in defined}
    written = undefined_node.written_ids(ctx)
    return frozenset(i for i in undefined if str(i) in written)


def _first_edges_walk(ctx) -> dict:
    found: dict = {}
    for index, edge in enumerate(ctx.block.edges):
        found.setdefault(edge.span.line, []).append((index, edge))
    return {line: edges[:1] for line, edges in found.items()}


def check(text: str) -> dict:
    """Compares each shortcut with its walk on every failing block of `text`; how often each shortcut said no."""
    said_no = {"restatement": 0, "reverse": 0}
    for ctx in _contexts(text):
        if not drop_restatement.may_offer(graph_facts(ctx.block)):
            said_no["restatement"] += 1
            assert not _restatement_offered(ctx), text
        if not reverse_edge.turnable(ctx):
            said_no["reverse"] += 1
            assert _turnable_pairs(ctx) == [], text
        assert undefined_node._written_undefined(ctx) == _written_undefined_walk(ctx), text
        assert undefined_node._first_edges(ctx) == _first_edges_walk(ctx), text
    return said_no


def test_the_shortcuts_answer_as_the_walks_on_the_corpora():
    said_no = {"restatement": 0, "reverse": 0}
    offered = {"restatement": 0, "reverse": 0}
    for path in CORPORA:
        text = path.read_text(encoding="utf-8")
        for key, count in check(text).items():
            said_no[key] += count
        for ctx in _contexts(text):
            offered["restatement"] += _restatement_offered(ctx)
            offered["reverse"] += bool(_turnable_pairs(ctx))
    # the shortcuts spare work on most blocks, and the corpora have blocks where the kinds do offer
    assert min(said_no.values()) > 50 and min(offered.values()) > 0, (said_no, offered)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_texts(max_blocks=2))
def test_the_shortcuts_answer_as_the_walks_on_mutated_blocks(text):
    check(text)


def test_a_restatement_with_undefined_and_repeated_edges_is_offered():
    # the shortcut's one open case: an id defined once, edges to an undefined node and a repeated edge
    text = "##B##\n0:input\n1:output\n2:BN\n0->2\n0->2\n2->1\n2->9\n"
    (ctx,) = _contexts(text)
    assert drop_restatement.may_offer(graph_facts(ctx.block)) and _restatement_offered(ctx)
    (ctx,) = _contexts(text.replace("0->2\n0->2\n", "0->2\n"))
    assert not drop_restatement.may_offer(graph_facts(ctx.block)) and not _restatement_offered(ctx)
