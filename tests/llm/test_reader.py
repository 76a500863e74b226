"""The Reader against the loopback server: NADER's steps, strict replies with one retry,
idempotence, replay and the caps. The knowledge base here is a small in-memory stand-in with the
three methods the Reader uses; tests/llm/test_read_cli.py runs the command on the real one."""
from __future__ import annotations

import asyncio
import json
from contextlib import closing

import pytest

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import reply, truncated
from nader.agents.llm import LLMClient, LLMConfig, ReplayMiss
from nader.agents.llm.jsonreply import ReplyFormatError
from nader.agents.reader.papers import paper_from_text
from nader.agents.reader.reader import Reader, check_ideas, check_relevance, check_tag_reply

TREE = {
    "operation level": {"activation": ["gelu", "relu"], "normalization": ["batch normalization"]},
    "block and connectivity level": {"residual connections and multi-branch architectures": ["residual connections"],
                                     "dense connectivity for feature reuse": []},
    "network level": {"network-wise scaling": ["channel width scaling"]},
}
METHOD = "## 3. Gated Block\n\nMultiply a depthwise convolution by a sigmoid gate.\n\n## 4. Experiments\nNumbers."
PAPER_TEXT = "# Gated\n\nAbstract\n\nA gated block.\n\n## 1. Introduction\nIntro.\n\n## 2. Related Work\nOld.\n\n" + METHOD


class MemoryKB:
    def __init__(self):
        self.sources: dict[str, bool] = {}
        self.ideas: list[tuple] = []

    def has_source(self, paper_id):
        return paper_id in self.sources

    def add_source(self, paper_id, title=None, relevant=None):
        self.sources[paper_id] = relevant

    def add_ideas(self, ideas):
        ideas = list(ideas)
        self.ideas += ideas
        return len(ideas)


def step(body: dict) -> str:
    system = body["messages"][0]["content"]
    return "relevance" if "specialist" in system else "tag" if "classifies" in system else "extract"


def scripted_reader(body: dict):
    """Replies of a cooperative model: relevant unless the title says 'Dataset'."""
    kind = step(body)
    text = body["messages"][1]["content"]
    if kind == "relevance":
        relevant = "Title: Dataset" not in text
        return reply(json.dumps({"relevant": relevant, "reason": "about blocks" if relevant else "about data"}))
    if kind == "extract":
        return reply(json.dumps({"ideas": ["Gate a depthwise convolution with a sigmoid.", "Use GELU after the gate."]}))
    return reply(json.dumps({"tags": [
        {"idea": 1, "granularity": "block and connectivity level",
         "main_category": "residual connections and multi-branch architectures", "sub_category": None},
        {"idea": 2, "granularity": "operation level", "main_category": "activation", "sub_category": "gelu"}]}))


def papers():
    return [paper_from_text(PAPER_TEXT, "gated.md"),
            paper_from_text("Dataset of cats\n\nAbstract\n\nMany cats.", "cats.md")]


def run(reader, items):
    async def main():
        try:
            return await reader.read_all(items)
        finally:
            await reader.client.aclose()
    return asyncio.run(main())


def make_reader(client, kb=None):
    return Reader(client, kb if kb is not None else MemoryKB(), tree=TREE, make_idea=lambda *a: a)


def test_reads_relevant_papers_into_tagged_ideas(server, tmp_path):
    server.responder = scripted_reader
    kb = MemoryKB()
    with closing(make_client(server, tmp_path)) as client:
        outcomes, stopped = run(make_reader(client, kb), papers())
        roles = [r["role"] for r in client.store.rows()]
    assert stopped is None
    assert [(o.status, o.ideas_found, o.ideas_added) for o in outcomes] == [("added", 2, 2), ("irrelevant", 0, 0)]
    gated = outcomes[0].paper_id
    assert kb.ideas == [
        ("Gate a depthwise convolution with a sigmoid.", gated, "block and connectivity level",
         "residual connections and multi-branch architectures", None),
        ("Use GELU after the gate.", gated, "operation level", "activation", "gelu")]
    assert kb.sources == {gated: True, outcomes[1].paper_id: False}
    assert sorted(roles) == sorted(["reader.relevance", "reader.extract", "reader.tag", "reader.relevance"])
    extract = next(b for b in server.chat_requests if step(b) == "extract")["messages"][1]["content"]
    assert "sigmoid gate" in extract and "Related Work" not in extract and "Numbers." not in extract
    assert "  activation: [gelu, relu]" in extract  # the attribute tree is shown
    tag = next(b for b in server.chat_requests if step(b) == "tag")["messages"][1]["content"]
    assert "1. Gate a depthwise convolution with a sigmoid." in tag and "2. Use GELU after the gate." in tag
    assert all(b["response_format"] == {"type": "json_object"} for b in server.chat_requests)


def test_reading_again_costs_no_call(server, tmp_path):
    server.responder = scripted_reader
    kb = MemoryKB()
    with closing(make_client(server, tmp_path)) as client:
        run(make_reader(client, kb), papers())
    sent = len(server.chat_requests)
    with closing(make_client(server, tmp_path / "other-run")) as client:
        outcomes, _ = run(make_reader(client, kb), papers())
        assert client.usage.total.calls == 0 and client.usage.total.recorded_calls == 0
    assert [o.status for o in outcomes] == ["known", "known"] and len(server.chat_requests) == sent


def test_malformed_reply_is_retried_once_with_the_parse_error(server, tmp_path):
    server.chat_script += [reply("Yes, this paper is relevant.")]
    server.responder = scripted_reader
    with closing(make_client(server, tmp_path)) as client:
        (outcome,), _ = run(make_reader(client), papers()[:1])
        first = client.store.rows()[0]
    assert outcome.status == "added"
    retry = server.chat_requests[1]["messages"]
    assert retry[2] == {"role": "assistant", "content": "Yes, this paper is relevant."}
    assert retry[3]["role"] == "user" and "could not be used: the reply is not one JSON object" in retry[3]["content"]
    assert first["status"] == "rejected" and "not one JSON object" in first["error"]


def test_a_reply_unusable_twice_fails_the_paper_only(server, tmp_path):
    bad_tags = reply(json.dumps({"tags": [{"idea": 1, "granularity": "operation level",
                                           "main_category": "attention tricks", "sub_category": None}]}))

    def responder(body):
        if step(body) == "tag":
            return bad_tags
        if step(body) == "extract":
            return reply(json.dumps({"ideas": ["Gate it."]}))
        return scripted_reader(body)

    server.responder = responder
    kb = MemoryKB()
    with closing(make_client(server, tmp_path)) as client:
        outcomes, stopped = run(make_reader(client, kb), papers())
    assert stopped is None
    assert [o.status for o in outcomes] == ["failed", "irrelevant"]
    assert "reader_tag.v1: the reply stayed unusable after one retry" in outcomes[0].reason
    assert "'attention tricks' is not a main category of 'operation level'" in outcomes[0].reason
    retry = [b for b in server.chat_requests if step(b) == "tag"][1]["messages"][-1]["content"]
    assert "one of: activation, normalization" in retry  # the error names the valid choices
    assert kb.ideas == [] and outcomes[0].paper_id not in kb.sources  # read again next time


def test_truncated_extraction_is_retried_with_the_reason(server, tmp_path):
    server.responder = scripted_reader
    with closing(make_client(server, tmp_path)) as client:
        server.chat_script += [reply(json.dumps({"relevant": True, "reason": "r"})), truncated('{"ideas": ["Gate')]
        (outcome,), _ = run(make_reader(client), papers()[:1])
    assert outcome.status == "added"
    retry = [b for b in server.chat_requests if step(b) == "extract"][1]["messages"][-1]["content"]
    assert "cut off at the token limit" in retry


def test_replay_reads_the_same_without_an_endpoint(server, tmp_path):
    server.responder = scripted_reader
    with closing(make_client(server, tmp_path / "recorded")) as client:
        recorded, _ = run(make_reader(client), papers())
    server.close()
    kb = MemoryKB()
    config = LLMConfig(model="local-model")
    with closing(LLMClient.from_config(config, store=tmp_path / "replayed", replay=tmp_path / "recorded")) as client:
        replayed, stopped = run(make_reader(client, kb), papers())
    assert stopped is None
    assert [o.as_dict() for o in replayed] == [o.as_dict() for o in recorded]
    assert len(kb.ideas) == 2
    # A paper the recorded run never read stops the replay loudly.
    other = paper_from_text("Another block\n\nAbstract\n\nNew.", "new.md")
    with closing(LLMClient.from_config(config, replay=tmp_path / "recorded")) as client:
        (outcome,), stopped = run(make_reader(client, MemoryKB()), [other])
    assert isinstance(stopped, ReplayMiss) and outcome.status == "stopped"
    assert "replay miss" in outcome.reason and "messages[1].content" in outcome.reason


def test_token_cap_stops_the_reader_and_a_rerun_resumes(server, tmp_path):
    server.responder = scripted_reader
    kb = MemoryKB()
    items = [paper_from_text(PAPER_TEXT.replace("# Gated", f"# Gated {i}"), f"g{i}.md") for i in range(3)]
    with closing(make_client(server, tmp_path, max_tokens=300, max_total_tokens=2500, max_concurrency=1)) as client:
        outcomes, stopped = run(make_reader(client, kb), items)
    assert stopped is not None and "token cap reached" in str(stopped)
    done = [o.status for o in outcomes]
    assert "stopped" in done and done.count("added") >= 1
    with closing(make_client(server, tmp_path, max_tokens=300, max_total_tokens=100_000, max_concurrency=1)) as client:
        again, stopped = run(make_reader(client, kb), items)
    assert stopped is None
    assert [o.status for o in again] == ["known" if s == "added" else "added" for s in done]
    assert len(kb.ideas) == 6


# ------------------------------------------------------------------ reply checks
def test_checks_of_each_step():
    assert check_relevance({"relevant": False, "reason": " not  blocks "}) == (False, "not blocks")
    with pytest.raises(ReplyFormatError, match="exactly the keys"):
        check_relevance({"relevant": True, "reason": "r", "score": 3})
    with pytest.raises(ReplyFormatError, match="true or false"):
        check_relevance({"relevant": "yes", "reason": "r"})
    assert check_ideas({"ideas": []}) == []
    with pytest.raises(ReplyFormatError, match="at most 2"):
        check_ideas({"ideas": ["a", "b", "c"]}, max_ideas=2)
    with pytest.raises(ReplyFormatError, match="idea 2 must be a non-empty string"):
        check_ideas({"ideas": ["a", ""]})
    with pytest.raises(ReplyFormatError, match="70 words"):
        check_ideas({"ideas": ["word " * 70]})
    ok = {"tags": [{"idea": 1, "granularity": "block and connectivity level",
                    "main_category": "dense connectivity for feature reuse", "sub_category": None}]}
    assert check_tag_reply(ok, 1, TREE) == [("block and connectivity level", "dense connectivity for feature reuse", None)]
    with pytest.raises(ReplyFormatError, match="1 tags given for 2 ideas"):
        check_tag_reply(ok, 2, TREE)
    wrong_sub = {"tags": [{"idea": 1, "granularity": "operation level", "main_category": "activation",
                           "sub_category": "swish"}]}
    with pytest.raises(ReplyFormatError, match="'swish' is not a sub-category of 'activation'; one of: gelu, relu"):
        check_tag_reply(wrong_sub, 1, TREE)
    with pytest.raises(ReplyFormatError, match="granularity 'layer level' is not one of"):
        check_tag_reply({"tags": [{"idea": 1, "granularity": "layer level"}]}, 1, TREE)
