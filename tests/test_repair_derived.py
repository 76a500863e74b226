"""A candidate block takes what it can of its parent's analyses (passes/derived_facts.py, from region.py): each must
be what the candidate computes itself, on every candidate of the corpora and of mutated blocks (issue 39)."""
from __future__ import annotations

from dataclasses import fields

from hypothesis import HealthCheck, given, settings

from strategies import sound_blocks
from test_repair_speed import CORPORA
from text_strategies import mutated
from nader.compiler.passes.structure import dead_nodes, graph_facts
from nader.compiler.passes.verify import verify_program
from nader.compiler.repair import region
from nader.compiler.repair.search import error_candidates
from nader.dsl.format import format_block
from nader.dsl.ir import Block
from nader.dsl.parser import parse

BOTH = frozenset({"safe", "unsafe"})


def _fresh(block: Block) -> Block:
    """The same block, nothing computed."""
    return Block(block.name, block.nodes, block.edges, block.leading_comments, block.header_comment,
                 block.trailing_comments, block.span, block.header_span)


def _facts(block: Block) -> dict:
    facts = graph_facts(block)
    found = {f.name: getattr(facts, f.name) for f in fields(facts)}
    found["misfits"] = set(found["misfits"])  # in no particular order
    return found


def derived(text: str) -> dict:
    """Candidates whose graph facts, topological order and dead nodes came from their parent's, by what:
    fails where one differs from what the candidate computes itself."""
    parsed = parse(text)
    reports, file_level = verify_program(parsed, stem_stride=None)
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    counts = {"facts": 0, "order": 0, "dead": 0}
    seen = []
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        block_region = region.BlockRegion(lines, starts[index], starts[index + 1], report, {"stem_stride": None},
                                          file_level)
        verdict = block_region._verdict
        # each candidate with what it was given before it is verified
        block_region._verdict = lambda block, *rest: seen.append((block, dict(block._analyses or {}))) or \
            verdict(block, *rest)
        for d in report.diagnostics:
            for _, fix in error_candidates(lines, [(report, d)], BOTH, frozenset()) if d.is_error else ():
                region._VERIFIED.clear()
                del seen[:]
                block_region.after(fix)
                for candidate, taken in seen:
                    fresh = _fresh(candidate)
                    assert _facts(candidate) == _facts(fresh), text
                    assert list(candidate.input_map().items()) == list(fresh.input_map().items())
                    assert list(candidate.node_map().items()) == list(fresh.node_map().items())
                    assert candidate.topological_order() == fresh.topological_order(), text
                    assert dead_nodes(candidate) == dead_nodes(fresh), text
                    assert bool(taken.get("wires_forward")) <= bool((fresh._analyses or {}).get("wires_forward"))
                    counts["facts"] += "graph_facts" in taken
                    counts["order"] += "topological_order" in taken
                    counts["dead"] += "dead_nodes" in taken
    return counts


def test_the_corpora_candidates_take_their_parents_analyses_as_they_would_compute_them():
    total = {"facts": 0, "order": 0, "dead": 0}
    for path in CORPORA:
        for key, count in derived(path.read_text(encoding="utf-8")).items():
            total[key] += count
    assert min(total.values()) > 20, total  # each way is taken


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(sound_blocks(max_steps=6).map(format_block).flatmap(mutated))
def test_a_damaged_sound_blocks_candidates_take_their_parents_analyses_as_they_would_compute_them(text):
    derived(text)
