"""The edit replies Gemma 3 270M wrote (tests/fixtures/gemma_edit_replies, with where each came
from) are left out and repaired as recorded: the edits that cannot apply are left out (`drop-edit`)
and the block the others make is repaired to one that verifies and differs from the parent, or
nothing is offered. The replies sampled under the earlier grammar are refused by the parent's
grammar now (an id taken twice, a block name of 1,276 characters), and those sampled under it
parse with it, as llama.cpp read its GBNF form."""
from __future__ import annotations

import json
from pathlib import Path

import lark
import pytest

from nader.agents.bench.nad import base_blocks
from nader.compiler.edit_reply import check_edit_reply
from nader.compiler.grammar_export import render_grammar
from nader.compiler.passes.canonical import canonical_hash
from nader.compiler.reply_repair import DROP_EDIT, repair_edit_reply
from nader.dsl.edits import EDITS_PER_REPLY, SMALL_EDITS_PER_REPLY
from nader.dsl.parser import parse

FOLDER = Path(__file__).resolve().parent / "fixtures" / "gemma_edit_replies"
REPLIES = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))["replies"]
PROVENANCE = ("why", "run", "call_id", "model", "prompt", "request", "plan", "parent", "grammar", "created", "reply")


@pytest.mark.parametrize("entry", REPLIES, ids=lambda e: f"{e['prompt']}:{e['request']}")
def test_each_reply_is_left_out_and_repaired_as_recorded(entry):
    assert all(entry.get(key) not in (None, "") for key in PROVENANCE)
    parent = base_blocks()[entry["parent"]]
    parent_hash = canonical_hash(parse(parent).program.blocks[0])
    assert check_edit_reply(entry["reply"], parent, parent_hash).ok is entry["verifies_as_written"]
    fixed = repair_edit_reply(entry["reply"], parent, parent_hash)
    if entry["verifies_as_written"]:
        assert fixed is None  # nothing to repair
        return
    assert (fixed is not None) is entry["repaired"]
    if fixed is None:
        return
    assert fixed.check.ok and canonical_hash(parse(fixed.check.text).program.blocks[0]) != parent_hash
    dropped = [f.code for f in fixed.result.applied if f.kind == DROP_EDIT]
    assert dropped == entry["left_out"]


@pytest.mark.parametrize("entry", REPLIES, ids=lambda e: f"{e['prompt']}:{e['request']}")
def test_the_parents_grammar_takes_what_it_was_sampled_under_and_refuses_the_earlier_replies(entry):
    parent = parse(base_blocks()[entry["parent"]]).program.blocks[0]
    sampled_under_it = entry["prompt"] == "modifier_edits.v3"  # else at most 24 edits: refused for what they hold
    most = SMALL_EDITS_PER_REPLY if sampled_under_it else EDITS_PER_REPLY
    grammar = lark.Lark(render_grammar("lark", reply="edits", parent=parent, most=most))
    if sampled_under_it:
        grammar.parse(entry["reply"].rstrip("\n") + "\n")
    else:
        with pytest.raises(lark.exceptions.LarkError):
            grammar.parse(entry["reply"].rstrip("\n") + "\n")
