"""The Modifier with a profile's `reply = "edits"`, against the loopback server: it asks for edits
(`modifier_edits.v2`, with the parent's edit grammar where the profile names a grammar field), applies them
to the parent, and sends edits that cannot apply or a block that does not verify back
(`modifier_edits_repair.v1`)."""
from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.llm.profiles import ModelProfile
from nader.agents.modifier import EDITS, EDITS_REPAIR, EDITS_SMALL, Modifier, block_grammar, edits_grammar
from nader.compiler.grammar_export import render_grammar
from nader.dsl.edits import EDITS_PER_REPLY, SMALL_EDITS_PER_REPLY
from nader.dsl.parser import parse
from scripted import ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
ARCH = (REPO / "examples" / "resnet_basic.nad").read_text()
BASE = ARCH.split("##ResNetBasic_stem##")[0]
PLAN = "Replace the first ReLU with GELU."
EDIT = "##ResNetGelu##\nreplace 4:GELU\n"
UNKNOWN = "##ResNetGelu##\nreplace 14:GELU\n"
INVALID = "##ResNetGelu##\nreplace 4:Frobnicate\n"


def _client(server, tmp_path, **profile):
    return make_client(server, tmp_path, profiles=(ModelProfile("local-model", **profile),))


@pytest.mark.parametrize("first", [UNKNOWN, INVALID])
def test_edits_profile_asks_for_edits_and_repairs_them(server, tmp_path, first):
    server.responder = ScriptedLLM({PLAN: [first, EDIT]})
    with closing(_client(server, tmp_path, reply="edits")) as client:
        m = Modifier(client, rounds=3).modify(ARCH, PLAN, arch_id="1")
    assert m.ok and not m.first_ok and m.rounds == 2 and m.reply_form == "edits"
    assert "4:GELU" in m.base_text and "##ResNetGelu##" in m.base_text and m.arch_text.count("##") == 6
    assert "replace 4:GELU" in m.attempts[1].reply and "0->2" not in m.attempts[1].reply  # as written
    first_prompt, second = (r["messages"] for r in server.chat_requests)
    assert "only the edits" in first_prompt[-1]["content"] and "`replace ID:OP`" in first_prompt[0]["content"]
    feedback = second[-1]["content"]
    assert "rejected your edits" in feedback
    if first is UNKNOWN:
        assert "line 4 `replace 14:GELU`" in feedback  # the reply's line, in its fence and "edit-unknown-node" in feedback
    else:
        assert "your edits make" in feedback and "`4:Frobnicate`" in feedback


def test_edits_go_with_the_edit_grammar_where_the_profile_names_a_field(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [EDIT]})
    with closing(_client(server, tmp_path, reply="edits", grammar="llama.cpp")) as client:
        assert Modifier(client, rounds=1).write_block(BASE, PLAN).ok
    (body,) = server.chat_requests
    parent = parse(BASE).program.blocks[0]
    assert body["grammar"] == edits_grammar(BASE) == render_grammar("gbnf", reply="edits", parent=parent)
    assert body["grammar"] not in (block_grammar("edits"), block_grammar())
    # the parent's operation nodes are what `replace` and `remove` may name
    assert 'op-id ::= "2" | "3" | "4" | "5" | "6" | "7" | "8"' in " ".join(body["grammar"].split())


@pytest.mark.parametrize("small", [True, False])
def test_a_small_profile_gets_the_v3_prompt_and_the_smaller_bound(server, tmp_path, small):
    server.responder = ScriptedLLM({PLAN: [EDIT]})
    with closing(_client(server, tmp_path, reply="edits", grammar="llama.cpp", small=small)) as client:
        modifier = Modifier(client, rounds=1)
        assert modifier.write_block(BASE, PLAN).ok
        assert modifier.edit_bound() == ((EDITS_SMALL, SMALL_EDITS_PER_REPLY) if small else (EDITS, EDITS_PER_REPLY))
    (body,) = server.chat_requests
    most = SMALL_EDITS_PER_REPLY if small else EDITS_PER_REPLY
    parent = parse(BASE).program.blocks[0]
    assert body["grammar"] == edits_grammar(BASE, most) == render_grammar("gbnf", reply="edits", parent=parent,
                                                                          most=most)
    assert f"then 1 to {most} lines" in body["grammar"]
    text = body["messages"][-1]["content"]
    assert f"(at most {most})" in text
    # v3 names the nodes `replace` may change and the ids new nodes take, as its grammar enforces
    said = "`replace` and `remove` name one of the nodes 2, 3, 4, 5, 6, 7, 8; new nodes take the ids 9, 10, 11, 12"
    assert (said in text) is small and ("each once, then stop" in body["messages"][0]["content"]) is small


def test_block_profile_and_modifier_setting(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [EDIT]})
    with closing(_client(server, tmp_path)) as client:  # reply = "block": an edit reply is no block
        m = Modifier(client, rounds=1).write_block(BASE, PLAN)
        assert not m.ok and m.reply_form == "block" and m.attempts[0].check.codes == ["no-block"]
        assert Modifier(client, rounds=1, reply="edits").write_block(BASE, PLAN).ok
    with pytest.raises(ValueError):
        Modifier(None, reply="lines")


def test_the_edit_prompts_are_new_versions():
    from nader.agents.prompts import prompt_doc
    assert "edits" in prompt_doc(EDITS) and "edits" in prompt_doc(EDITS_REPAIR) and "small" in prompt_doc(EDITS_SMALL)
    assert (EDITS, EDITS_SMALL) == ("modifier_edits.v2", "modifier_edits.v3")  # v2 kept: recorded runs replay


# ------------------------------------------------------------------ the compiler's repairs
# A BN fed two branches (NAD207): the compiler moves the extra input to the Add node.
TWO_INTO_BN = EDIT.replace("replace 4:GELU\n", "replace 4:GELU\nconnect 3->6\n")
WHOLE_TWO_INTO_BN = BASE.replace("4:ReLU", "4:GELU").replace("6->7\n", "6->7\n3->6\n")


@pytest.mark.parametrize("reply, broken, good", [("edits", TWO_INTO_BN, EDIT),
                                                 ("block", WHOLE_TWO_INTO_BN, BASE.replace("4:ReLU", "4:GELU"))])
def test_repair_auto_takes_the_compilers_repair_without_another_round(server, tmp_path, reply, broken, good):
    server.responder = ScriptedLLM({PLAN: [broken, good]})
    with closing(_client(server, tmp_path, reply=reply)) as client:
        m = Modifier(client, rounds=3, repair="auto").modify(ARCH, PLAN, arch_id="1")
        off = Modifier(client, rounds=3).write_block(BASE, PLAN)
    assert m.ok and not m.first_ok and m.rounds == 1 and len(server.chat_requests) == 1 + 2
    assert m.repair["fixed"] == ["NAD207"] and "-3->6" in m.repair["diff"] and "3->6" in m.repair["written"]
    assert "3->6" not in m.base_text and "4:GELU" in m.base_text and m.arch_text.count("##") == 6
    assert off.ok and off.repair is None and off.rounds == 2  # without repair: the LLM's second round


def test_repair_suggest_puts_the_proposed_fix_in_the_feedback(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [WHOLE_TWO_INTO_BN, BASE.replace("4:ReLU", "4:GELU")]})
    with closing(_client(server, tmp_path)) as client:
        m = Modifier(client, rounds=3, repair="suggest").write_block(BASE, PLAN)
    assert m.ok and m.rounds == 2 and m.suggested == 1 and m.repair is None
    feedback = server.chat_requests[1]["messages"][-1]["content"]
    assert "proposed fix" in feedback and "NAD207 (move-input, unsafe)" in feedback and "-3->6" in feedback


def test_repair_never_applies_where_the_compiler_cannot_make_the_block_verify(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [INVALID, EDIT]})
    with closing(_client(server, tmp_path, reply="edits")) as client:
        m = Modifier(client, rounds=3, repair="auto").write_block(BASE, PLAN)
    assert m.ok and m.rounds == 2 and m.repair is None
    with pytest.raises(ValueError):
        Modifier(None, repair="always")
