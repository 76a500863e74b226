"""Every role's prompts fit the model's context (issue 23): with a profile's `context`, each request
of the Modifier, the Reflector, GENIUS and FairNAD (through the Modifier), estimated at 3
characters a token, fits with the reply's max_tokens; the language reference and the parent block
reach the Modifier whole; what was left out is said in the text. Without a context every request
is what it was before sizing existed."""
from __future__ import annotations

import json
import re
from pathlib import Path

from knowledge_helpers import HashingEmbedder
from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.context_fit import ROUND_CHARS, estimated_tokens
from nader.agents.fairnad import FairNAD, render_plan
from nader.agents.genius import CELL_PROMPT, Genius
from nader.agents.knowledge import ATTRIBUTE_TREE
from nader.agents.llm.profiles import ModelProfile
from nader.agents.modifier import IMPLEMENT, Modifier
from nader.agents.prompts import render
from nader.agents.experiences import ExperienceBase
from nader.agents.reflector import LESSON, Reflector

REPO = Path(__file__).resolve().parents[2]
ARCH = (REPO / "examples" / "resnet_basic.nad").read_text()
BASE = ARCH.split("##ResNetBasic_stem##")[0]
GOOD = BASE.replace("4:ReLU", "4:GELU")
BROKEN = GOOD.replace("6:BN", "6:BatchNormish")  # an unknown operation
REFERENCE = Modifier.language_reference()
MAX_TOKENS = 512
CUT = "cut to fit the model's context"
PLAN = "Replace the first ReLU with GELU."
LONG_PLAN = PLAN + " Then gate the second convolution with a sigmoid of its pooled input." * 120
LESSONS = [f"Lesson {i}: keep every Add node at two inputs of the same shape and width. " * 12 for i in range(5)]


def client_with(server, tmp_path, context):
    profiles = (ModelProfile("local-model", context=context),) if context else ()
    return make_client(server, tmp_path / f"ctx{context}", max_tokens=MAX_TOKENS, profiles=profiles)


def fenced(text: str) -> str:
    return f"```\n{text.strip()}\n```"


def fits(body, context) -> bool:
    return estimated_tokens(body["messages"]) + body["max_tokens"] <= context


def unfitted_tokens(name, **variables) -> int:
    return estimated_tokens(render(name, **variables)) + MAX_TOKENS


def first_modifier_request(server, tmp_path, context, plan, lessons):
    server.requests.clear()
    server.responder = lambda body: reply(fenced(GOOD))
    client = client_with(server, tmp_path, context)
    m = Modifier(client).write_block(BASE, plan, lessons)
    client.close()
    assert m.ok
    (body,) = server.chat_requests
    return body


# ---------------------------------------------------------------------- the Modifier
def test_a_long_plan_is_cut_and_the_reference_and_block_reach_the_model_whole(server, tmp_path):
    context = 2600
    assert unfitted_tokens(IMPLEMENT, reference=REFERENCE, block=BASE.strip(), plan=LONG_PLAN, experiences=LESSONS,
                           block_name="ResNetBasic") > context  # it would not fit unsized
    body = first_modifier_request(server, tmp_path, context, LONG_PLAN, LESSONS)
    system, user = (m["content"] for m in body["messages"])
    assert fits(body, context)
    assert REFERENCE in system and BASE.strip() in user
    assert CUT in user and LONG_PLAN[:200] in user and LONG_PLAN not in user
    assert "(5 more left out to fit the model's context)" in user


def test_the_best_lessons_that_fit_are_kept_and_the_rest_said_left_out(server, tmp_path):
    context = 2700
    assert unfitted_tokens(IMPLEMENT, reference=REFERENCE, block=BASE.strip(), plan=PLAN, experiences=LESSONS,
                           block_name="ResNetBasic") > context
    body = first_modifier_request(server, tmp_path, context, PLAN, LESSONS)
    user = body["messages"][1]["content"]
    assert fits(body, context)
    assert REFERENCE in body["messages"][0]["content"] and PLAN in user and CUT not in user
    kept = [lesson for lesson in LESSONS if lesson in user]
    assert kept and kept == LESSONS[:len(kept)] and len(kept) < len(LESSONS)  # the best first
    assert f"({len(LESSONS) - len(kept)} more left out to fit the model's context)" in user


def test_without_a_context_the_implement_prompt_is_unchanged(server, tmp_path):
    body = first_modifier_request(server, tmp_path, None, LONG_PLAN, LESSONS + ["a sixth lesson"])
    assert body["messages"] == render(IMPLEMENT, reference=REFERENCE, block=BASE.strip(), plan=LONG_PLAN,
                                      experiences=LESSONS, block_name="ResNetBasic")


def repair_requests(server, tmp_path, context) -> list[dict]:
    server.requests.clear()
    server.responder = lambda body: reply(fenced(BROKEN))
    client = client_with(server, tmp_path, context)
    m = Modifier(client, rounds=4).write_block(BASE, PLAN)
    client.close()
    assert not m.ok and m.rounds == 4
    return server.chat_requests


def test_repair_rounds_keep_the_first_prompt_and_the_latest_round(server, tmp_path):
    unsized = repair_requests(server, tmp_path, None)
    assert [len(b["messages"]) for b in unsized] == [2, 4, 6, 8]  # every round, as before
    # a context that holds the first prompt with the room it keeps for a round, then one round, not two
    context = estimated_tokens(unsized[0]["messages"]) + MAX_TOKENS + ROUND_CHARS // 3
    assert estimated_tokens(unsized[1]["messages"]) + MAX_TOKENS <= context
    assert estimated_tokens(unsized[2]["messages"]) + MAX_TOKENS > context
    sized = repair_requests(server, tmp_path, context)
    assert all(fits(body, context) for body in sized)
    assert sized[1]["messages"] == unsized[1]["messages"]  # it fits: nothing left out
    last = sized[3]["messages"]
    assert len(last) == 4 and last[:2] == unsized[0]["messages"] and REFERENCE in last[0]["content"]
    assert last[2] == unsized[3]["messages"][6]  # the latest reply
    assert last[3]["content"].startswith("(2 earlier rounds of replies and feedback left out to fit the model's context)")
    assert "`6:BatchNormish`" in last[3]["content"]  # the latest feedback


def test_fairnad_plans_reach_the_model_within_the_context(server, tmp_path):
    # FairNAD's iterate plan quotes a canonical diff, as long as the change was; the Modifier cuts it.
    diff = "\n".join(f"+ {i}:Conv2d(C, C, 3, 1, 1)" for i in range(2, 400))
    plan = render_plan(stage="iterate", pick=0.0, tree=ATTRIBUTE_TREE, previous="add a gate", diff=diff,
                       improved=True, parent_acc=80.0, grandparent_acc=79.0)
    server.responder = lambda body: reply(fenced(GOOD))
    client = client_with(server, tmp_path, 2600)
    FairNAD(Modifier(client), skeleton="nb201", depths=[5, 5, 5]).write(ARCH, plan, arch_id=None, progress={})
    client.close()
    body = server.chat_requests[0]
    assert fits(body, 2600) and REFERENCE in body["messages"][0]["content"] and CUT in body["messages"][1]["content"]


# ---------------------------------------------------------------------- the Reflector
DIAGNOSTICS = "Compiler diagnostics:\n" + "- line 6 `6:BatchNormish`: error[NAD104] unknown operation\n" * 300


def reflector_requests(server, tmp_path, context, responder) -> list[dict]:
    server.requests.clear()
    server.responder = responder
    client = client_with(server, tmp_path, context)
    experiences = ExperienceBase(tmp_path / f"exp{context}", HashingEmbedder())
    Reflector(client, experiences).record("failure", PLAN, DIAGNOSTICS, block=BROKEN)
    client.close()
    experiences.close()
    return server.chat_requests


def test_the_reflector_cuts_the_diagnostics_and_the_block_to_fit(server, tmp_path):
    lesson = lambda body: reply(json.dumps({"lesson": "Use only registered operations."}))  # noqa: E731
    context = 1500
    assert unfitted_tokens(LESSON, kind="failure", plan=PLAN, detail=DIAGNOSTICS, block=BROKEN.strip()) > context
    (body,) = reflector_requests(server, tmp_path, context, lesson)
    user = body["messages"][-1]["content"]
    assert fits(body, context) and CUT in user and PLAN in user and "error[NAD104]" in user
    (unsized,) = reflector_requests(server, tmp_path, None, lesson)
    assert unsized["messages"] == render(LESSON, kind="failure", plan=PLAN, detail=DIAGNOSTICS, block=BROKEN.strip())


def test_the_reflectors_retry_fits_too(server, tmp_path):
    rambling = iter(["Let me think. " * 400, json.dumps({"lesson": "Use only registered operations."})])
    first, retry = reflector_requests(server, tmp_path, 1500, lambda body: reply(next(rambling)))
    assert fits(first, 1500) and fits(retry, 1500)
    assert retry["messages"][:2] == first["messages"] and retry["messages"][2]["role"] == "assistant"
    assert CUT in retry["messages"][2]["content"]  # the long reply sent back cut


# ---------------------------------------------------------------------- GENIUS
HISTORY = [{"id": i, "op_list": f"[3, 3, {i % 5}, 1, 3, 3]", "cell": f"|nor_conv_3x3~0|+|none~0|skip~{i}|",
            "result": f"validation accuracy {50 + i / 10:.2f}%"} for i in range(200)]
NUMBERED = re.compile(r"^(\d+)\. op_list", re.M)


def genius_requests(server, tmp_path, context) -> list[dict]:
    server.requests.clear()
    server.responder = lambda body: reply("I suggest op_list = [3, 3, 3]" + " because convolutions help" * 40)
    client = client_with(server, tmp_path, context)
    genius = Genius(client, repairs=3, iterations=300, dataset="cifar10", skeleton="nb201")
    answer = genius.answer(HISTORY, 201, lambda text: (None, "- an op_list has six operation ids"),
                           cells=True, arch_id=None)
    client.close()
    assert answer.text is None and answer.replies == 4
    return server.chat_requests


def test_genius_keeps_the_newest_tried_architectures_that_fit(server, tmp_path):
    context = 2048
    unsized = genius_requests(server, tmp_path, None)
    assert unsized[0]["messages"] == render(CELL_PROMPT, dataset="cifar10", history=HISTORY, iteration=201,
                                            iterations=300)
    assert [len(b["messages"]) for b in unsized] == [2, 4, 6, 8]
    assert estimated_tokens(unsized[0]["messages"]) + MAX_TOKENS > context
    sized = genius_requests(server, tmp_path, context)
    assert all(fits(body, context) for body in sized)
    prompt = sized[0]["messages"][1]["content"]
    left_out = int(re.search(r"\((\d+) earlier experiments left out to fit the model's context\)", prompt).group(1))
    numbers = [int(n) for n in NUMBERED.findall(prompt)]
    assert numbers == list(range(left_out + 1, 201))  # the newest, numbered as in the whole history
    assert HISTORY[-1]["result"] in prompt and HISTORY[0]["cell"] + ")" not in prompt
    last = sized[3]["messages"]
    assert len(last) == 4 and last[:2] == sized[0]["messages"]
    assert last[3]["content"].startswith("(2 earlier rounds of replies and feedback left out")
