"""What verifying a repair's candidate block skips must not change its verdict (issue 39), on every candidate of
the corpora and of mutated blocks: the analyses it takes from its parent's (passes/derived_facts.py, from
region.py) are what it computes itself, and verified `counting` (`CountingSink`: codes, no words) it gets the
diagnostics' codes, in order, and the shapes it gets in full."""
from __future__ import annotations

from dataclasses import fields

from hypothesis import HealthCheck, given, settings

from strategies import sound_blocks
from test_repair_speed import CORPORA
from text_strategies import mutated
from nader.compiler.passes.structure import dead_nodes, graph_facts
from nader.compiler.passes.verify import verify_block, verify_program
from nader.compiler.repair import region
from nader.compiler.repair.search import block_progress, error_candidates
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
    """Candidates whose graph facts, topological order and dead nodes came from their parent's, by what, and
    those verified `counting` that had words skipped: fails where one differs from what the candidate gets
    without the shortcut."""
    parsed = parse(text)
    reports, file_level = verify_program(parsed, stem_stride=None)
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    counts = {"facts": 0, "order": 0, "dead": 0, "counted": 0}
    seen = []
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        block_region = region.BlockRegion(lines, starts[index], starts[index + 1], report, {"stem_stride": None},
                                          file_level)
        verdict = block_region._verdict
        # each candidate with what it was given before it is verified
        block_region._verdict = lambda block, *rest: seen.append((block, dict(block._analyses or {}), rest)) or \
            verdict(block, *rest)
        for d in report.diagnostics:
            for _, fix in error_candidates(lines, [(report, d)], BOTH, frozenset()) if d.is_error else ():
                region._VERIFIED.clear()
                del seen[:]
                block_region.after(fix)
                for candidate, taken, (front_end, *role) in seen:
                    options = dict(role=role[0] if role else None, front_end=front_end, stem_stride=None)
                    options["role"] = options["role"] or block_region.role
                    full, counted = (verify_block(_fresh(candidate), counting=c, **options) for c in (False, True))
                    assert [d.code for d in counted.diagnostics] == [d.code for d in full.diagnostics], text
                    assert block_progress(counted) == block_progress(full) and counted.ok == full.ok, text
                    assert (counted.shapes and counted.shapes.shapes) == (full.shapes and full.shapes.shapes), text
                    counts["counted"] += any(not d.message for d in counted.diagnostics)
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


def test_the_corpora_candidates_verified_with_shortcuts_get_what_they_would_without():
    total = {"facts": 0, "order": 0, "dead": 0, "counted": 0}
    for path in CORPORA:
        for key, count in derived(path.read_text(encoding="utf-8")).items():
            total[key] += count
    assert min(total.values()) > 20, total  # each way is taken


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(sound_blocks(max_steps=6).map(format_block).flatmap(mutated))
def test_a_damaged_sound_blocks_candidates_verified_with_shortcuts_get_what_they_would_without(text):
    derived(text)
