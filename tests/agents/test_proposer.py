"""The Proposer: ideas retrieved by similarity to the parent, applied ideas left out, the LLM's
ranking and plan, and the --no-reader / --no-proposer-ranking variants."""
from __future__ import annotations


import json
import random
from pathlib import Path

import pytest

from knowledge_helpers import HashingEmbedder
from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.knowledge import Idea, KnowledgeBase
from nader.agents.proposer import NoIdeas, Proposer, describe
from scripted import ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
BASE = (REPO / "examples" / "resnet_basic.nad").read_text().split("##ResNetBasic_stem##")[0]
IDEAS = ["add a squeeze and excitation gate after the last conv BN",
         "replace ReLU activation with GELU in the conv block",
         "use a depthwise conv with kernel 7 in the block",
         "tokenize the image into patches with a transformer",
         "apply label smoothing to the loss"]


@pytest.fixture
def kb(tmp_path):
    kb = KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder())
    kb.add_ideas([Idea(text) for text in IDEAS])
    yield kb
    kb.close()


def test_describe_names_history_and_operations():
    text = describe(BASE, ["added GELU"])
    assert text.startswith("added GELU;") and "Conv2d x2" in text and "ReLU x2" in text


def test_ranked_plan_from_retrieved_ideas(server, tmp_path, kb):
    server.responder = ScriptedLLM(idea=2)
    client = make_client(server, tmp_path)
    plan = Proposer(client, kb, candidates=3).propose(BASE, history=[], rng=random.Random(0), arch_id="4")
    client.close()
    prompt = server.chat_requests[0]["messages"][-1]["content"]
    shown = [line for line in prompt.splitlines() if line[:2] in ("1.", "2.", "3.")]
    assert len(shown) == 3 and '"ranking"' in prompt
    assert plan.plan == f"apply idea 2 to the block: {shown[1][3:]}" and plan.idea == shown[1][3:]
    assert len(plan.ranking) == 3 and plan.prompt_tokens > 0


def test_ideas_applied_to_the_parent_are_not_proposed_again(server, tmp_path, kb):
    server.responder = ScriptedLLM(idea=1)
    client = make_client(server, tmp_path)
    proposer = Proposer(client, kb, candidates=2)
    applied = set()
    for _ in range(len(IDEAS)):
        applied.add(proposer.propose(BASE, applied=applied, rng=random.Random(0)).idea_id)
    assert len(applied) == len(IDEAS)
    with pytest.raises(NoIdeas):
        proposer.propose(BASE, applied=applied, rng=random.Random(0))
    client.close()


def test_no_ranking_takes_the_most_similar_idea(server, tmp_path, kb):
    server.responder = ScriptedLLM(idea=1)
    client = make_client(server, tmp_path)
    plan = Proposer(client, kb, rank=False).propose(BASE, rng=random.Random(0))
    client.close()
    prompt = server.chat_requests[0]["messages"][-1]["content"]
    assert '"ranking"' not in prompt and plan.ranking == []
    assert plan.idea == kb.search(describe(BASE), k=1)[0][0].text


def test_no_reader_draws_ideas_at_random(server, tmp_path, kb):
    server.responder = ScriptedLLM(idea=1)
    client = make_client(server, tmp_path)
    proposer = Proposer(client, kb, use_reader=False, candidates=2)
    drawn = {proposer.propose(BASE, rng=random.Random(seed)).idea for seed in range(12)}
    client.close()
    assert len(drawn) >= 3  # not always the most similar


def test_unusable_reply_falls_back_to_the_first_candidate(server, tmp_path, kb):
    server.chat_script = [reply(json.dumps({"idea": 9, "plan": "x"})), reply("not json")]
    client = make_client(server, tmp_path)
    plan = Proposer(client, kb, candidates=2).propose(BASE, rng=random.Random(0))
    client.close()
    assert len(server.chat_requests) == 2 and plan.plan == plan.idea


def test_a_long_history_keeps_its_latest_entries_within_the_context(server, tmp_path, kb):
    from nader.agents.context_fit import estimated_tokens
    from nader.agents.llm.profiles import ModelProfile
    history = [f"change {i:03d}: " + "widen the second convolution and gate it " * 2 for i in range(300)]
    for context in (8192, None):
        server.requests.clear()
        server.responder = ScriptedLLM(idea=1)
        profiles = (ModelProfile("local-model", context=context),) if context else ()
        client = make_client(server, tmp_path / str(context), profiles=profiles)
        Proposer(client, kb, candidates=2).propose(BASE, history=history, rng=random.Random(0))
        client.close()
        (body,) = server.chat_requests
        prompt = body["messages"][-1]["content"]
        assert history[-1] in prompt
        if context:
            assert history[0] not in prompt and "earlier entries left out to fit the model's context" in prompt
            assert estimated_tokens(body["messages"]) + body["max_tokens"] <= context
        else:
            assert all(h in prompt for h in history) and "left out" not in prompt


def test_the_retry_after_an_unusable_reply_fits_the_context_too(server, tmp_path, kb):
    from nader.agents.context_fit import estimated_tokens
    from nader.agents.llm.profiles import ModelProfile
    history = [f"change {i:03d}: " + "widen the second convolution and gate it " * 2 for i in range(300)]
    server.chat_script = [reply("Let me think about it. " * 900), reply(json.dumps({"idea": 1, "plan": "gate it"}))]
    client = make_client(server, tmp_path, profiles=(ModelProfile("local-model", context=8192),))
    plan = Proposer(client, kb, candidates=2).propose(BASE, history=history, rng=random.Random(0))
    client.close()
    first, retry = server.chat_requests
    assert plan.plan == "gate it" and retry["messages"][:len(first["messages"])] == first["messages"]
    assert "cut to fit the model's context" in retry["messages"][-2]["content"]  # the long reply sent back cut
    assert all(estimated_tokens(b["messages"]) + b["max_tokens"] <= 8192 for b in (first, retry))
