"""Edit replies specialised to their parent and repaired (issue 28): the parent's edit grammar
(`nadc grammar --reply edits --parent FILE`) derives only edits that name the parent's nodes or
new ids (new nodes come in connected, with `insert`), and `repair_edit_reply` leaves out the edits that cannot apply (an unsafe `drop-edit`
each) and repairs the block the others make. The lines Gemma 3 270M wrote under the generic
grammar (benchmarks/README.md) are the cases the parent's grammar must refuse."""
from __future__ import annotations

from pathlib import Path

import lark
import pytest

from conftest import run_nadc
from nader.compiler.edit_reply import check_edit_reply
from nader.compiler.grammar_export import NEW_IDS, render_grammar
from nader.compiler.passes.canonical import canonical_hash
from nader.compiler.reply_repair import DROP_EDIT, repair_edit_reply
from nader.dsl.edits import EDITS_PER_REPLY, VERBS, apply_edits, parse_edits
from nader.dsl.ops import Group
from nader.dsl.parser import parse
from test_grammar_export import Sampler

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "resnet_basic.nad"
BASE = EXAMPLE.read_text().split("##ResNetBasic_stem##")[0]
PARENT = parse(BASE).program.blocks[0]
PARENT_HASH = canonical_hash(PARENT)
OPS = {str(n.id) for n in PARENT.nodes if n.op in Group.COMPUTE}  # 2..8
ALL = {str(n.id) for n in PARENT.nodes}
_SAMPLER = Sampler(5, reply="edits", parent=PARENT)
SAMPLES = [_SAMPLER.sample() for _ in range(150)]


def test_every_sample_of_the_parents_grammar_names_its_nodes_or_new_ids():
    new_ids = set()
    for text in SAMPLES:
        reply = parse_edits(text)
        assert not reply.problems and 1 <= len(reply.edits) <= EDITS_PER_REPLY, text
        for edit in reply.edits:
            if edit.verb in ("replace", "remove"):
                assert edit.args[0] in OPS, text
            elif edit.verb in ("add", "insert"):
                assert edit.args[0] not in ALL and edit.args[2:] != ("1",), text
                new_ids.add(edit.args[0])
            else:
                *sources, target = edit.args
                assert "1" not in sources and target != "0", text
            if edit.verb in ("add", "replace", "insert"):  # a computing operation of the language
                node = parse(f"##B##\n{edit.args[0]}:{edit.args[1]}\n").program.blocks[0].nodes[0]
                assert node.op in Group.COMPUTE, text
    assert len(new_ids) == NEW_IDS  # the samples reach every free id offered
    assert {e.verb for text in SAMPLES for e in parse_edits(text).edits} == set(VERBS) - {"add"}


@pytest.mark.parametrize("line", ["replace 3x3:BN", "remove 0s", "add 1:input", "add 9:ReLU", "remove 0",
                                  "insert 2:ReLU after 4", "insert 9:input after 0", "insert 9:ReLU after 1",
                                  "replace 1:ReLU", "connect 1->2", "disconnect 3->0", "replace 9:ReLU"])
def test_the_parents_grammar_refuses_edits_that_cannot_apply(line):
    parser = lark.Lark(render_grammar("lark", reply="edits", parent=PARENT))
    parser.parse("##X##\nreplace 4:GELU\ninsert 9:ReLU after 2\nconnect 3->9\ndisconnect 9->3\n")
    with pytest.raises(lark.exceptions.LarkError):
        parser.parse(f"##X##\n{line}\n")


def test_nadc_grammar_parent_prints_the_parents_grammar(tmp_path):
    for fmt in ("gbnf", "lark"):
        run = run_nadc(["grammar", "--format", fmt, "--reply", "edits", "--parent", str(EXAMPLE)])
        assert run.code == 0 and run.stdout == render_grammar(fmt, reply="edits", parent=PARENT)
    assert run.stdout != render_grammar("lark", reply="edits")
    refused = run_nadc(["grammar", "--parent", str(EXAMPLE)])
    assert refused.code == 2 and "--reply edits" in refused.stderr
    missing = run_nadc(["grammar", "--reply", "edits", "--parent", str(tmp_path / "none.nad")])
    assert missing.code == 2 and "Traceback" not in missing.stderr and "none.nad" in missing.stderr


def test_skip_applies_the_edits_that_can_and_lists_the_others():
    reply = "##X##\nreplace 3x3:BN\nreplace 4:GELU\nremove 12\n"
    assert apply_edits(BASE, reply).text is None
    applied = apply_edits(BASE, reply, skip=True)
    assert "4:GELU" in applied.text and "3:BN" in applied.text
    assert [(p.code, p.line) for p in applied.problems] == [("edit-unknown-node", 2), ("edit-unknown-node", 4)]


def test_repair_leaves_out_the_edits_that_cannot_apply():
    fixed = repair_edit_reply("##ResNetGelu##\nreplace 3x3:BN\nreplace 4:GELU\n", BASE, PARENT_HASH)
    assert fixed is not None and fixed.check.ok and "4:GELU" in fixed.check.text
    (dropped,) = fixed.result.applied
    assert (dropped.code, dropped.kind, dropped.safety) == ("edit-unknown-node", DROP_EDIT, "unsafe")
    assert "line 2 `replace 3x3:BN`" in dropped.message
    record = fixed.record()
    assert record["fixed"] == ["edit-unknown-node"] and record["diff"] == "" and "4:GELU" in record["written"]
    assert "drop-edit, unsafe" in fixed.proposal() and "```diff" not in fixed.proposal()


def test_repair_then_fixes_the_block_the_other_edits_make():
    # the BN at 6 fed two inputs (NAD207): the compiler's repair of the block, after the dropped edit
    fixed = repair_edit_reply("##X##\nremove 0s\nreplace 4:GELU\nconnect 3->6\n", BASE, PARENT_HASH)
    assert fixed is not None and fixed.check.ok
    assert [f.kind for f in fixed.result.applied][0] == DROP_EDIT and "NAD207" in fixed.result.fixed_codes
    assert "3->6" in fixed.written and "3->6" not in fixed.check.text and "-3->6" in fixed.record()["diff"]


@pytest.mark.parametrize("reply", [
    "##X##\nreplace 4:GELU\n",  # verifies as written: nothing to repair
    "##X##\nremove 0s\nadd 1:input\n",  # nothing applies
    "##X##\nreplace 3x3:BN\nreplace 4:ReLU\n",  # what applies gives back the parent
    "I cannot do that.",
])
def test_no_repair_where_nothing_is_left_to_offer(reply):
    assert repair_edit_reply(reply, BASE, PARENT_HASH) is None


def test_insert_puts_a_node_between_a_node_and_its_consumers():
    applied = apply_edits(BASE, "##X##\ninsert 9:BN after 4\ninsert 10:GELU after 0\n")
    assert applied.ok, applied.problems
    block = parse(applied.text).program.blocks[0]
    inputs = {n.id: block.inputs_of(n.id) for n in block.nodes}
    assert inputs[9] == [4] and inputs[5] == [9] and inputs[10] == [0]
    assert inputs[2] == [10] and inputs[7] == [6, 10]  # the shortcut keeps its argument position
    assert check_edit_reply("##X##\ninsert 9:BN after 4\n", BASE, PARENT_HASH).ok
    codes = [p.code for p in apply_edits(BASE, "insert 9:BN after 12\ninsert 2:BN after 4\n").problems]
    assert codes == ["edit-unknown-node", "edit-duplicate-node"]
    assert [p.code for p in parse_edits("insert 9:BN behind 4\n").problems] == ["edit-syntax"]


def test_keep_applies_the_first_edits_and_leaves_out_the_rest():
    reply = "##X##\nreplace 4:GELU\nremove 12\ninsert 9:BN after 2\nnot an edit\n"
    applied = apply_edits(BASE, reply, skip=True, keep=1)
    assert "4:GELU" in applied.text and "9:BN" not in applied.text
    # the unknown node after the cut is not judged: the whole tail is left out as such
    assert [(p.code, p.line) for p in applied.problems] == [("edit-left-out", 3), ("edit-left-out", 4)]
    assert apply_edits(BASE, reply, skip=True, keep=9).problems == apply_edits(BASE, reply, skip=True).problems


def test_repair_leaves_out_the_last_edits_when_the_whole_block_cannot_be_repaired():
    # removing the output's only feed and what could stand for it leaves no block to repair; the
    # first edit alone verifies
    reply = "##X##\nreplace 4:GELU\nremove 8\nremove 7\nremove 6\nremove 5\nremove 3\nremove 2\nremove 4\n"
    assert _whole_block_repair(reply) is None
    fixed = repair_edit_reply(reply, BASE, PARENT_HASH)
    assert fixed is not None and fixed.check.ok and "4:GELU" in fixed.check.text
    left = [f for f in fixed.result.applied if f.kind == DROP_EDIT]
    assert left and {f.code for f in left} == {"edit-left-out"} and "left out line 9 `remove 4`" in left[-1].message


def _whole_block_repair(reply: str):
    """The repair of the block all the reply's edits make, as before the rule above."""
    from nader.compiler.reply_repair import _repair_applied

    return _repair_applied(apply_edits(BASE, reply, skip=True), PARENT_HASH)
