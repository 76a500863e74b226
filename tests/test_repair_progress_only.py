"""`nadc verify` leaves out candidates a kind proves cannot get the verifier further (issue 39, point 3).

A merge whose kept operands alone fail its rule (`_common.cannot_meet`) fails whatever a candidate does to
its other operands: such candidates are not verified for `nadc verify`'s suggestions. Every one left out
must be one the ranking would have rejected, on the committed corpora and on mutated blocks; the repair
loop, whose lookahead uses candidates that only keep the verifier as far, still gets them all.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from test_repair_speed import CORPORA
from text_strategies import mutated_texts
from nader.compiler.passes.verify import verify_program
from nader.compiler.repair import region
from nader.compiler.repair.search import error_candidates
from nader.dsl.parser import parse

BOTH = frozenset({"safe", "unsafe"})

#: A residual `Add` of three: node 2 is twice as wide as 3 and 4. Re-pointing 2 can mend it; changing 3 or 4
#: cannot (2 and the other still differ on the channels), nor can pooling 2 and 4 (the widths stay), nor
#: projecting 2 with stride 96 (3 is 1x1, 4 is HxH, and ceil(H/96) is neither for every H).
THREE_WAY = """##B##
0:input
1:output
2:Conv2d(out_channels=2*C,kernel_size=1,stride=1)
3:AdaptiveAvgPool2d(1)
4:BN
5:Add
0->2
0->3
0->4
2,3,4->5
5->1
"""

#: The same, with a second `Add` (node 7) failing on a branch of its own: its error stays whatever is done to 5's
#: operands, so the same candidates are left out.
TWO_FAILING = THREE_WAY.replace("5:Add\n", "5:Add\n6:Conv2d(out_channels=2*C,kernel_size=1,stride=1)\n7:Add\n8:Add\n") \
    .replace("5->1\n", "0->6\n0,6->7\n5,7->8\n8->1\n")

#: `ReLU` 3 fed only from node 9, which no line defines: without that wire it has no input (NAD207 for NAD202).
STARVED = """##B##
0:input
1:output
2:BN
3:ReLU
0->2
9->3
2,3->4
4:Add
4->1
"""


def _key(fix) -> tuple:
    return fix.kind, tuple((e.span, e.text) for e in fix.edits)


def left_out(text: str) -> tuple[int, list]:
    """(candidates, [(the candidate left out, its verdict)]) over every error of `text`."""
    parsed = parse(text)
    options = {"stem_stride": None}
    reports, file_level = verify_program(parsed, **options)
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    seen, out = 0, []
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        block_region = region.BlockRegion(lines, starts[index], starts[index + 1], report, options, file_level)
        for d in report.diagnostics:
            if not d.is_error:
                continue
            every = [fix for _, fix in error_candidates(lines, [(report, d)], BOTH, frozenset())]
            kept = {_key(fix) for _, fix in error_candidates(lines, [(report, d)], BOTH, frozenset(), True)}
            seen += len(every)
            out += [(fix, block_region.rank(fix, 0)) for fix in every if _key(fix) not in kept]
    return seen, out


@pytest.mark.parametrize("text", [THREE_WAY, TWO_FAILING])
def test_the_candidates_left_out_change_only_operands_that_cannot_mend_the_merge(text):
    seen, out = left_out(text)
    assert {fix.kind for fix, _ in out} == {"re-point-operand", "match-channels", "match-spatial"}
    assert all(rank is None for _, rank in out)
    kept = [fix for _, fix in error_candidates(text.split("\n"), _errors(text)[:1], BOTH, frozenset(), True)]
    assert any("node 5 (`Add`) from node 0 instead of node 2" in fix.message for fix in kept)  # can mend it: tried
    assert not any("instead of node 3" in fix.message or "instead of node 4" in fix.message for fix in kept)


def _errors(text: str) -> list:
    reports, _ = verify_program(parse(text), stem_stride=None)
    return [(r, d) for r in reports for d in r.diagnostics if d.is_error]


def test_every_candidate_left_out_of_the_corpora_would_have_been_rejected():
    total, out = 0, []
    for path in CORPORA:
        seen, found = left_out(path.read_text())
        total += seen
        out += [(path.name, fix.message) for fix, rank in found if rank is not None]
    assert total > 100 and out == []


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_texts(max_blocks=2))
def test_every_candidate_left_out_of_a_mutated_block_would_have_been_rejected(text):
    _, out = left_out(text)
    assert [fix.message for fix, rank in out if rank is not None] == []


def test_removing_a_wire_that_leaves_its_node_without_input_is_left_out():
    seen, out = left_out(STARVED)
    assert [fix.kind for fix, _ in out] == ["drop-undefined-edge"] and all(rank is None for _, rank in out)


def test_a_removal_in_a_block_that_defines_an_id_twice_is_verified():
    # each node with id 2 is counted for the inputs of 2: without the repeated edge, the two `BN` are fed right
    # and only the `Add` is not (3 errors, not 4), which counting the first definition alone would miss
    text = "##B##\n0:input\n1:output\n2:Add\n2:BN\n2:BN\n0->2\n0->2\n2->1\n"
    seen, out = left_out(text)
    assert seen and out == []
    kept = [fix for _, fix in error_candidates(text.split("\n"), _errors(text)[2:3], BOTH, frozenset(), True)]
    assert "drop-repeated-edges" in {fix.kind for fix in kept}
