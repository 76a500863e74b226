"""The NAD benchmark's data: every request is answerable, and its checks tell answers apart."""
from __future__ import annotations

import collections

import pytest

from nader.agents.bench import nad
from nader.agents.bench.checks import CHECKS, judge
from nader.compiler.passes.verify import verify_block
from nader.dsl.ir import Role
from nader.dsl.parser import parse

REQUESTS = nad.load_requests()


def test_five_base_blocks_with_ten_micro_and_ten_macro_requests_each():
    counts = collections.Counter((r.base, r.level) for r in REQUESTS)
    assert set(nad.base_blocks()) == {"resnet_basic", "resnet_bottleneck", "inception", "convnext", "se_resnet"}
    assert set(counts.values()) == {10} and len(counts) == 10
    assert len({r.id for r in REQUESTS}) == 100


@pytest.mark.parametrize("name", sorted(nad.base_blocks()))
def test_base_blocks_verify(name):
    block = parse(nad.base_blocks()[name]).program.blocks[0]
    assert verify_block(block, role=Role.BASE).ok


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: r.id)
def test_reference_answer_verifies_and_passes_its_checks(request_):
    verifies, outcome = nad.score(request_, request_.reference_text())
    assert verifies, outcome.reason
    assert outcome.ok, outcome.reason
    # the unchanged base block never passes
    assert not nad.score(request_, request_.base_text)[1].ok


def test_micro_checks_reject_the_answers_to_other_micro_requests():
    """Micro requests have specific answers: another micro request's answer must not pass."""
    leaks = []
    for r in REQUESTS:
        if r.level != "micro":
            continue
        for other in REQUESTS:
            if other.base == r.base and other.level == "micro" and other.id != r.id:
                verifies, outcome = nad.score(r, other.reference_text())
                if verifies and outcome.ok:
                    leaks.append((r.id, other.id))
    assert leaks == []


def test_every_check_kind_is_used_and_unknown_kinds_are_refused():
    used = {c["kind"] for r in REQUESTS for c in r.checks}
    assert used == set(CHECKS)
    r = REQUESTS[0]
    from nader.compiler.passes.diff import block_diff

    diff = block_diff(parse(r.base_text).program.blocks[0], parse(r.reference_text()).program.blocks[0])
    with pytest.raises(ValueError, match="unknown check kind"):
        judge([{"kind": "nope"}], diff)


def test_a_reply_that_does_not_verify_is_not_a_success():
    r = nad.request_by_id(REQUESTS, "resnet_basic/micro/01")
    broken = r.reference_text().replace("8->1", "")  # output left unconnected
    verifies, outcome = nad.score(r, broken)
    assert not verifies and "does not verify" in outcome.reason
