"""Prompts sized to the model's context: with a profile's `context`, the Reader cuts a long method
section so that the extraction request (estimated at 3 characters a token) and the reply's
max_tokens fit, and says it cut; without `context` the section is sent as before (30,000
characters at most, no marker)."""
from __future__ import annotations

import asyncio

from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.context_fit import (best_that_fit, cut_text, cut_texts, estimated_tokens, fit_conversation,
                                       latest_that_fit, room_chars)
from nader.agents.llm.profiles import ModelProfile
from nader.agents.reader.papers import paper_from_text
from nader.agents.reader.reader import MAX_METHOD_CHARS, Reader
from test_reader import MemoryKB, TREE, scripted_reader, step

MARKER = "cut to fit the model's context"
LONG_METHOD = "## 3. Method\n\n" + "The gated block multiplies a convolution by a sigmoid gate. " * 700
PAPER = ("# Gated\n\nAbstract\n\nA gated block.\n\n## 1. Introduction\nIntro.\n\n## 2. Related Work\nOld.\n\n"
         + LONG_METHOD + "\n\n## 4. Experiments\nNumbers.")


def extraction_request(server, tmp_path, **settings) -> dict:
    server.responder = scripted_reader
    client = make_client(server, tmp_path, **settings)

    async def read():
        try:
            return await Reader(client, MemoryKB(), tree=TREE, make_idea=lambda *a: a).read_all(
                [paper_from_text(PAPER, "gated.md")])
        finally:
            await client.aclose()

    (outcome,), stopped = asyncio.run(read())
    assert stopped is None and outcome.status == "added", outcome.reason
    return next(b for b in server.chat_requests if step(b) == "extract")


def test_a_long_method_section_is_cut_to_fit_an_8k_context(server, tmp_path):
    assert len(paper_from_text(PAPER, "gated.md").method) > MAX_METHOD_CHARS  # the 30,000 cap applies first
    body = extraction_request(server, tmp_path, profiles=(ModelProfile("local-model", context=8192),))
    user_text = body["messages"][1]["content"]
    assert MARKER in user_text
    assert estimated_tokens(body["messages"]) + body["max_tokens"] <= 8192
    assert "sigmoid gate" in user_text  # the start of the section is kept


def test_without_a_context_the_method_section_is_sent_as_before(server, tmp_path):
    body = extraction_request(server, tmp_path)
    user_text = body["messages"][1]["content"]
    method = paper_from_text(PAPER, "gated.md").method
    assert MARKER not in user_text and method[:MAX_METHOD_CHARS] in user_text
    assert method[:MAX_METHOD_CHARS + 1] not in user_text


def test_a_short_method_section_is_not_cut_even_with_a_context(server, tmp_path):
    body = extraction_request(server, tmp_path, profiles=(ModelProfile("local-model", context=131072),))
    assert MARKER not in body["messages"][1]["content"]


def test_room_and_cut():
    skeleton = [{"role": "system", "content": "x" * 300}, {"role": "user", "content": "y" * 300}]
    assert room_chars(None, skeleton, 100) is None
    assert room_chars(1000, skeleton, 100) == (1000 - 100 - 216) * 3
    assert room_chars(100, skeleton, 100) == 0
    cut = cut_text("z" * 1000, 200)
    assert len(cut) <= 200 and cut.startswith("zzz") and MARKER in cut
    assert cut_text("short", 200) == "short"


def test_latest_that_fit_keeps_the_newest_entries_and_says_how_many_went():
    items = [f"entry number {i}" for i in range(10)]  # 14 characters, 18 with the list's dash
    assert latest_that_fit(items, None) == items
    assert latest_that_fit(items, 10_000) == items
    kept = latest_that_fit(items, 80 + 3 * 18)
    assert kept == ["(7 earlier entries left out to fit the model's context)", *items[7:]]


def test_best_that_fit_keeps_the_first_entries_and_says_how_many_went():
    items = [f"lesson number {i}" for i in range(10)]  # 15 characters, 19 counted
    assert best_that_fit(items, None) == items and best_that_fit([], 0) == []
    assert best_that_fit(items, 80 + 2 * 19) == [*items[:2], "(8 more left out to fit the model's context)"]


def test_cut_texts_share_the_room_and_a_short_text_stays_whole():
    short, long_a, long_b = "s" * 50, "a" * 5000, "b" * 3000
    cut = cut_texts([short, long_a, long_b], 1050)
    assert cut[0] == short and sum(map(len, cut)) <= 1050
    assert MARKER in cut[1] and MARKER in cut[2] and abs(len(cut[1]) - len(cut[2])) <= 1
    assert cut_texts([long_a], None) == [long_a]


class SizedClient:
    def __init__(self, context, max_tokens=100):
        self.context, self.config = context, type("Config", (), {"max_tokens": max_tokens})()

    def window(self):
        return self.context, self.config.max_tokens


def test_fit_conversation_keeps_the_first_prompt_and_the_latest_round():
    first = [{"role": "system", "content": "s" * 300}, {"role": "user", "content": "u" * 600}]
    rounds = []
    for i in range(4):
        rounds += [{"role": "assistant", "content": f"reply {i} " + "r" * 600},
                   {"role": "user", "content": f"feedback {i} " + "f" * 300}]
    assert fit_conversation(SizedClient(None), first, rounds) == [*first, *rounds]
    assert fit_conversation(SizedClient(10_000), first, rounds) == [*first, *rounds]
    fitted = fit_conversation(SizedClient(1000), first, rounds)
    assert fitted[:2] == first and fitted[2] == rounds[-2] and len(fitted) == 4
    assert fitted[3]["content"] == ("(3 earlier rounds of replies and feedback left out to fit the model's context)\n"
                                    + rounds[-1]["content"])
    tight = fit_conversation(SizedClient(700), first, rounds)
    assert estimated_tokens(tight) + 100 <= 700 and MARKER in tight[2]["content"]


def test_the_docs_give_the_room_kept_for_a_round():
    from pathlib import Path

    from nader.agents.context_fit import ROUND_CHARS
    docs = (Path(__file__).resolve().parents[2] / "docs" / "llm.md").read_text(encoding="utf-8")
    assert f"keeps {ROUND_CHARS:,} characters free" in docs
