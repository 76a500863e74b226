"""A candidate's lasting errors bound its verdict from below, so leaving out those ranked behind changes no fix.

`nadc verify`'s suggestions skip a later candidate whose lasting errors (lasting.py: what its change cannot
touch) already rank it behind the best one found (issue 39, point 3). The bound must hold for every
candidate: each part of it at most the verifier's, and its node count exact.
"""
from __future__ import annotations


from hypothesis import HealthCheck, given, settings

from test_repair_speed import CORPORA
from text_strategies import mutated_texts
from nader.compiler.passes.verify import verify_program
from nader.compiler.repair import suggest
from nader.compiler.repair.edit import EditorFix
from nader.compiler.repair.lasting import LastingErrors
from nader.compiler.repair.region import BlockRegion
from nader.compiler.repair.search import error_candidates
from nader.dsl.parser import parse

BOTH = frozenset({"safe", "unsafe"})

#: Two faults far apart: `ReLU` 3 has two inputs, and node 4's line names `Conv` (an unknown operation).
#: Whatever a candidate does to 3's inputs, line 5 keeps its error.
TWO_FAULTS = """##B##
0:input
1:output
2:BN
3:ReLU
4:Conv(out_channels=C)
0->2
0,2->3
3->4
4->1
"""

#: Node 4 is named by two edges and defined by none; `ReLU` 3 has two inputs. A candidate that merges them with
#: a new `Add` gives it the block's next free id, 4, and so defines it: both undefined ids go.
UNDEFINED = """##B##
0:input
1:output
2:BN
3:ReLU
0->2
0,2->3
3->4
4->1
"""


def bounds(text: str) -> list[tuple]:
    """(bound, the verifier's (progress, warnings, nodes)) of every candidate an editor makes for `text`'s errors."""
    parsed = parse(text)
    options = {"stem_stride": None}
    reports, file_level = verify_program(parsed, **options)
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    out = []
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        region = BlockRegion(lines, starts[index], starts[index + 1], report, options, file_level)
        lasting = LastingErrors(report)
        for d in report.diagnostics:
            if d.is_error:
                for _, fix in error_candidates(lines, [(report, d)], BOTH, frozenset()):
                    if type(fix) is EditorFix:
                        out.append((lasting.bound(fix.change), region.after(fix)))
    return out


def broken(pairs: list[tuple]) -> list[tuple]:
    """The pairs whose bound is above the verdict somewhere, or whose node count differs."""
    bad = []
    for bound, after in pairs:
        if bound is None or after is None:
            continue
        hidden, errors, warnings, nodes = bound
        progress = after[0]
        left = errors and (progress[1] != progress[2] or progress[3] != 0)  # an error left: no shapes
        if hidden > progress[0] or errors > progress[2] or warnings > after[1] or nodes != after[2] or left:
            bad.append((bound, after))
    return bad


def test_the_bound_holds_for_every_candidate_of_the_corpora():
    pairs = [pair for path in CORPORA for pair in bounds(path.read_text())]
    assert len(pairs) > 300 and broken(pairs) == []
    assert sum(bound is not None and bound[1] > 0 for bound, _ in pairs) > 50  # the bound is not empty


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_texts(max_blocks=2))
def test_the_bound_holds_for_every_candidate_of_a_mutated_block(text):
    assert broken(bounds(text)) == []


def test_an_error_on_a_line_the_candidate_leaves_lasts():
    pairs = bounds(TWO_FAULTS)
    lasting = [bound for bound, after in pairs if bound is not None and bound[1] and after is not None]
    # each candidate mends one fault and leaves the other; NAD104 (line 6) hides its line's checks
    assert {bound[:2] for bound in lasting} == {(0, 1), (1, 1)}
    assert broken(pairs) == []


def test_an_undefined_id_the_candidate_defines_does_not_last():
    pairs = bounds(UNDEFINED)
    defining = [(bound, after) for bound, after in pairs if bound is not None and bound[3] == 5]
    assert defining and all(bound[1] == 0 and after[0][2] < 2 for bound, after in defining)
    assert any(bound[1] == 2 for bound, _ in pairs)  # the others leave both
    assert broken(pairs) == []


def _suggested(text: str) -> list:
    parsed = parse(text)
    reports, file_level = verify_program(parsed, stem_stride=None)
    suggest.suggest_fixes(text, reports, file_level, stem_stride=None)
    return [(d.code.code, d.fix) for r in reports for d in r.diagnostics]


def _unbounded(monkeypatch) -> list[bool]:
    """Verify every candidate from here on; the list records, per candidate, whether the bound left it out."""
    skipped = []
    original = suggest._behind

    def counted(*args):
        skipped.append(original(*args))
        return False

    monkeypatch.setattr(suggest, "_behind", counted)
    return skipped


def test_the_suggestions_are_those_of_verifying_every_candidate(monkeypatch):
    texts = [path.read_text() for path in CORPORA] + [TWO_FAULTS, UNDEFINED]
    with_bound = [_suggested(text) for text in texts]
    skipped = _unbounded(monkeypatch)
    assert [_suggested(text) for text in texts] == with_bound
    assert sum(skipped) >= 4  # candidates the bound leaves out, verified here all the same


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_texts(max_blocks=2))
def test_the_suggestions_for_a_mutated_block_are_those_of_verifying_every_candidate(text):
    with_bound = _suggested(text)
    original = suggest._behind
    suggest._behind = lambda *args: False
    try:
        assert _suggested(text) == with_bound
    finally:
        suggest._behind = original
