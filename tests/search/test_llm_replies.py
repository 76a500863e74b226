"""A reply never poisons a run: a reply that fails any check, or that makes the handling raise
anywhere, is a rejected proposal that names the error, and the loop goes on; served again from
the record (a resume, a replay) it makes the same rejection, never an exception.

The raising check is injected (monkeypatch) on replies carrying the marker POISON: the compiler's
checks do not raise on any input we know of, which is what a bug would look like. The real
poisons found (a JSON integer of 5,000 digits, JSON nested past the stack) are tested on the
parser. Training is real (digits, 256 images)."""
from __future__ import annotations

import json
import sqlite3

import pytest

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.llm.jsonreply import MAX_REPLY_CHARS, ReplyFormatError, parse_json_object
from nader.search.session import run_search
from search_helpers import settings
from test_llm_faults import WIDE, kb_dir  # noqa: F401 (the two-idea knowledge base fixture)

MARK = "POISON"
OPTIONS = {
    "nader": {"reader": False, "experience": False, "feedback": False},
    "fairnad": {"fair": 1, "pareto": 1, "iterative": 0, "repairs": 0},
    "genius": {"repairs": 0},
}


class Poisoned:
    """The first reply carries the marker; the others are usable (a JSON plan, or the WIDE block)."""

    def __init__(self, poisoned: int = 1):
        self.calls, self.poisoned = 0, poisoned

    def __call__(self, body):
        self.calls += 1
        mark = MARK if self.calls <= self.poisoned else "fine"
        if "propose exactly one" in body["messages"][0]["content"]:
            return reply(json.dumps({"ranking": [1, 2], "idea": 1, "plan": f"{mark}: widen the block"}))
        return reply(f"{mark}: a residual block should do better.\n```\n{WIDE}```")


def poison_checks(monkeypatch, error=RuntimeError):
    """Make the reply checks raise `error` on a reply carrying the marker."""
    import nader.agents.genius as genius
    import nader.agents.modifier as modifier
    import nader.agents.proposer as proposer

    real_block, real_plan = modifier.check_base_block, proposer.check_plan

    def check_base_block(reply, *args, **kwargs):
        if MARK in reply:
            raise error("poisoned reply")
        return real_block(reply, *args, **kwargs)

    def check_plan(reply, *args, **kwargs):
        if MARK in str(reply.get("plan")):
            raise error("poisoned reply")
        return real_plan(reply, *args, **kwargs)

    monkeypatch.setattr(modifier, "check_base_block", check_base_block)  # the roles that read base blocks
    monkeypatch.setattr(genius, "check_base_block", check_base_block)
    monkeypatch.setattr(proposer, "check_plan", check_plan)


def _cfg(run, server, kb_dir, strategy, **options):
    kb = {"kb": str(kb_dir)} if strategy != "genius" else {}
    return settings(run, strategy=strategy, trials=2, strategy_options={
        "llm_base_url": server.base_url, "llm_model": "m", **kb, **OPTIONS[strategy], **options})


def _archs(run):
    conn = sqlite3.connect(run / "runs.sqlite")
    rows = conn.execute("SELECT arch_id, status, diagnostics FROM archs ORDER BY arch_id").fetchall()
    conn.close()
    return [(a, s, json.loads(d)["message"] if d else None) for a, s, d in rows]


@pytest.mark.parametrize("strategy", ["nader", "genius", "fairnad"])
def test_a_reply_that_raises_is_a_rejected_proposal_and_replays_the_same(server, tmp_path, kb_dir, monkeypatch,
                                                                         strategy):
    poison_checks(monkeypatch)
    server.responder = Poisoned()
    run = tmp_path / "run"
    summary = run_search(_cfg(run, server, kb_dir, strategy))
    assert summary.stop.code in ("trials", "iterations"), summary.stop.message
    rows = _archs(run)
    (first, status, message), *rest = rows[1:]
    assert status == "invalid" and "RuntimeError: poisoned reply" in message, message
    assert any(s == "ok" for _, s, _ in rest)  # the loop went on and trained the next proposal

    # Replayed from the record (no endpoint), the same replies make the same rejections.
    asked = len(server.chat_requests)
    replayed = tmp_path / "replayed"
    again = run_search(_cfg(replayed, server, kb_dir, strategy, replay=str(run)))
    assert again.stop.code == summary.stop.code and len(server.chat_requests) == asked
    assert [(s, m) for _, s, m in _archs(replayed)] == [(s, m) for _, s, m in rows]


def test_a_recorded_reply_that_now_raises_makes_the_same_rejection_on_resume(server, tmp_path, kb_dir, monkeypatch):
    # Session 1 records the reply and is interrupted in its handling; the handling now raises on it
    # (a newer check): the resumed session gets the reply back from the record and rejects it.
    server.responder = Poisoned()
    run = tmp_path / "run"
    cfg = _cfg(run, server, kb_dir, "genius")
    poison_checks(monkeypatch, error=KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        run_search(cfg)
    assert len(server.chat_requests) == 1 and [s for _, s, _ in _archs(run)] == ["ok"]

    poison_checks(monkeypatch, error=ValueError)
    summary = run_search(cfg)
    assert summary.stop.code == "trials"
    rows = _archs(run)
    assert rows[1][1] == "invalid" and "ValueError: poisoned reply" in rows[1][2]
    assert rows[2][1] == "ok"
    conn = sqlite3.connect(run / "runs.sqlite")
    sources = [s for s, in conn.execute("SELECT source FROM llm_calls ORDER BY call_id")]
    conn.close()
    assert sources == ["endpoint", "cache", "endpoint"]  # the poisoned reply came back from the record


@pytest.mark.parametrize("text", ['{"idea": ' + "1" * 5000 + "}", "[" * 100_000 + "]" * 100_000,
                                  '{"plan": "' + "x" * MAX_REPLY_CHARS + '"}'])
def test_json_replies_that_used_to_raise_are_format_errors(text):
    with pytest.raises(ReplyFormatError):
        parse_json_object(text)


def test_a_reply_too_long_or_one_the_check_raises_on_fails_like_any_other():
    from nader.agents.modifier import checked_reply

    seen = []

    def check(text):
        seen.append(text)
        return {}["no such key"]

    raised = checked_reply(check, "a short reply")
    assert not raised.ok and raised.codes == ["check-error"] and "KeyError" in raised.feedback
    too_long = checked_reply(check, "x" * (MAX_REPLY_CHARS + 1))
    assert not too_long.ok and too_long.codes == ["too-long"] and "longer than the 200,000 characters" in too_long.feedback
    assert seen == ["a short reply"]  # the long one was never read
