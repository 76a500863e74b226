"""Edit replies (nader.dsl.edits, `nadc grammar --reply edits`): parsed, applied to the parent with
located problems, verified like any reply; the grammar only derives edit replies the parser reads,
and bounds their length."""
from __future__ import annotations

from pathlib import Path

import lark
import pytest

from conftest import run_nadc
from nader.compiler.edit_reply import check_edit_reply
from nader.compiler.grammar_export import render_grammar, rules
from nader.compiler.passes.canonical import canonical_hash
from nader.dsl.edits import EDITS_PER_REPLY, apply_edits, parse_edits
from nader.dsl.parser import parse
from test_grammar_export import Sampler

REPO = Path(__file__).resolve().parents[1]
BASE = (REPO / "examples" / "resnet_basic.nad").read_text().split("##ResNetBasic_stem##")[0]
WIDER = """##ResNetWide##
add 9:Conv2d(out_channels=C,kernel_size=1)
connect 4->9
disconnect 4->5
connect 9->5
replace 4:GELU
"""


def _block(text):
    return parse(text).program.blocks[0]


def test_edits_apply_in_order_and_the_result_verifies():
    applied = apply_edits(BASE, WIDER)
    assert applied.ok and not applied.problems
    block = _block(applied.text)
    assert block.name == "ResNetWide"
    by_id = {n.id: n.op_name for n in block.nodes}
    assert by_id[9] == "Conv2d" and by_id[4] == "GELU"
    pairs = {(s, e.target) for e in block.edges for s in e.sources}
    assert (4, 9) in pairs and (9, 5) in pairs and (4, 5) not in pairs
    check = check_edit_reply(WIDER, BASE, canonical_hash(_block(BASE)))
    assert check.ok and "9:Conv2d" in check.text


def test_remove_takes_the_nodes_edges_and_no_header_keeps_the_parents_name():
    applied = apply_edits(BASE, "remove 6\nconnect 5->7\n")
    block = _block(applied.text)
    assert block.name == "ResNetBasic" and 6 not in {n.id for n in block.nodes}
    assert all(6 not in (*e.sources, e.target) for e in block.edges)
    assert check_edit_reply("remove 6\nconnect 5->7\n", BASE).ok


@pytest.mark.parametrize("edit, code, col", [
    ("remove 12", "edit-unknown-node", 1),
    ("add 2:ReLU", "edit-duplicate-node", 1),
    ("disconnect 0->1", "edit-unknown-edge", 1),
    ("connect 0->2", "edit-duplicate-edge", 1),
    ("  frobnicate 3", "edit-syntax", 3),
    ("connect 2", "edit-syntax", 1),
])
def test_an_edit_that_cannot_apply_is_located_in_the_reply(edit, code, col):
    applied = apply_edits(BASE, f"##X##\nreplace 4:GELU\n{edit}\n")
    assert not applied.ok
    (problem,) = applied.problems
    assert (problem.code, problem.line, problem.col) == (code, 3, col)
    assert problem.to_json()["end_col"] > col
    check = check_edit_reply(f"##X##\nreplace 4:GELU\n{edit}\n", BASE)
    assert not check.ok and check.codes == [code] and f"line 3 `{edit.strip()}`" in check.feedback


def test_a_later_edit_sees_the_earlier_ones():
    assert apply_edits(BASE, "add 9:ReLU\nconnect 8->9\nremove 9\n").ok
    assert [p.code for p in apply_edits(BASE, "remove 3\nconnect 3->4\n").problems] == ["edit-unknown-node"]


def test_an_invalid_result_is_the_compilers_diagnostics_of_the_new_block():
    check = check_edit_reply("replace 3:BatchNormish\n", BASE)
    assert not check.ok and any(c.startswith("NAD") for c in check.codes)
    assert "your edits make" in check.feedback and "`3:BatchNormish`" in check.feedback
    unchanged = check_edit_reply("replace 4:ReLU\n", BASE, canonical_hash(_block(BASE)))
    assert unchanged.codes == ["unchanged"]


def test_edits_are_bounded_and_an_empty_reply_is_a_problem():
    many = "".join(f"add {i}:ReLU\n" for i in range(10, 11 + EDITS_PER_REPLY))
    reply = parse_edits(many)
    assert len(reply.edits) == EDITS_PER_REPLY and [p.code for p in reply.problems] == ["edit-too-many"]
    assert [p.code for p in parse_edits("Sure!\n\n").problems] == ["edit-syntax"]
    assert [p.code for p in parse_edits("\n# nothing\n").problems] == ["edit-empty"]


def test_a_fenced_reply_is_read_inside_its_fence():
    text = "Here are the edits:\n```\n##X##\nreplace 4:GELU\n```\nThis swaps the activation."
    reply = parse_edits(text)
    assert not reply.problems and reply.name == "X" and [e.verb for e in reply.edits] == ["replace"]


_SAMPLER = Sampler(11, reply="edits")  # one sampler: a new one per sample would draw the same text
EDIT_SAMPLES = [_SAMPLER.sample() for _ in range(150)]


def test_every_edit_grammar_sample_parses_as_edits_whose_ops_are_the_languages():
    for text in EDIT_SAMPLES:
        reply = parse_edits(text)
        assert not reply.problems, (text, reply.problems)
        assert 1 <= len(reply.edits) <= EDITS_PER_REPLY and reply.name
        for edit in reply.edits:
            if edit.verb in ("add", "replace"):  # the operation part is a node line of the language
                result = parse(f"##B##\n{edit.args[0]}:{edit.args[1]}\n")
                assert not [d for d in result.diagnostics if d.code.code.startswith("NAD1")], (edit, result.diagnostics)


def test_the_edit_grammar_bounds_the_edit_lines_and_refuses_a_block():
    parser = lark.Lark(render_grammar("lark", reply="edits"))
    parser.parse(WIDER)
    parser.parse("##X##\n" + "remove 3\n" * EDITS_PER_REPLY)
    for text in ("##X##\n" + "remove 3\n" * (EDITS_PER_REPLY + 1), BASE, "##X##\n", "remove 3\n"):
        with pytest.raises(lark.exceptions.LarkError):
            parser.parse(text)
    assert "edit-line" in rules("edits") and "edit-line" not in rules(True)


def test_nadc_grammar_reply_edits_prints_the_edit_grammar():
    for fmt in ("gbnf", "lark", "ebnf"):
        result = run_nadc(["grammar", "--format", fmt, "--reply", "edits"])
        assert result.code == 0 and result.stdout == render_grammar(fmt, reply="edits")
    assert run_nadc(["grammar", "--reply", "block"]).stdout == run_nadc(["grammar", "--reply"]).stdout \
        == render_grammar("gbnf", reply=True)
    assert run_nadc(["grammar", "--reply", "lines"]).code == 2


def test_the_docs_give_the_edit_bound():
    for doc in ("docs/agents.md", "docs/llm.md"):
        assert f"at most {EDITS_PER_REPLY}" in (REPO / doc).read_text(encoding="utf-8"), doc
    assert f"1 to {EDITS_PER_REPLY} lines" in (REPO / "docs" / "language.md").read_text(encoding="utf-8")


def test_list_markers_and_inline_code_around_edits_are_taken_off():
    reply = parse_edits("##X##\n- replace 4:GELU\n2. `remove 6`\n* connect 5->7\n")
    assert not reply.problems and [e.verb for e in reply.edits] == ["replace", "remove", "connect"]
    assert [p.code for p in parse_edits("-- remove 6\n").problems] == ["edit-syntax"]
