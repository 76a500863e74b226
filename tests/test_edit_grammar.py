"""The parent's edit grammar (`nadc grammar --reply edits --parent FILE [--most N]`) gives new nodes
fresh ids by construction and bounds a reply (issue 39): under the earlier grammar, which offered
the next free ids in any order, Gemma 3 270M wrote `insert 9:...` and `insert 10:...` again and
again in 24 of 24 replies, each one after the first an id already taken (`edit-duplicate-node`),
and never ended a reply before the bound of 24 edits; and under any reply grammar it could write a
block name of 1,300 characters until `max_tokens` (benchmarks/README.md, 29 November)."""
from __future__ import annotations

from pathlib import Path

import lark
import pytest

from conftest import run_nadc
from nader.compiler.grammar_export import HEADER_CHARS, NEW_IDS, new_ids, op_ids, render_grammar
from nader.dsl.edits import EDITS_PER_REPLY, SMALL_EDITS_PER_REPLY, apply_edits, parse_edits
from nader.dsl.parser import parse
from test_grammar_export import Sampler

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "resnet_basic.nad"
BASE = EXAMPLE.read_text().split("##ResNetBasic_stem##")[0]
PARENT = parse(BASE).program.blocks[0]
FRESH = new_ids(PARENT)  # 9, 10, ...
SMALL = Sampler(3, reply="edits", parent=PARENT, most=SMALL_EDITS_PER_REPLY)
SAMPLES = [SMALL.sample() for _ in range(200)]
WIDE = Sampler(4, reply="edits", parent=PARENT)
WIDE_SAMPLES = [WIDE.sample() for _ in range(100)]


def _lark(most: int = EDITS_PER_REPLY):
    return lark.Lark(render_grammar("lark", reply="edits", parent=PARENT, most=most))


def test_the_fresh_ids_are_the_smallest_the_parent_does_not_use_and_the_nodes_its_operations():
    assert FRESH == ["9", "10", "11", "12", "13", "14"] and len(FRESH) == NEW_IDS
    assert op_ids(PARENT) == ["2", "3", "4", "5", "6", "7", "8"]
    assert new_ids(PARENT, most=2) == ["9", "10"]  # no more inserts than lines
    gap = parse("##G##\n0:input\n1:output\n5:ReLU\n0->5\n5->1\n").program.blocks[0]
    assert new_ids(gap, most=4) == ["2", "3", "4", "6"]


@pytest.mark.parametrize("samples, most", [(SAMPLES, SMALL_EDITS_PER_REPLY), (WIDE_SAMPLES, EDITS_PER_REPLY)])
def test_every_insert_takes_the_next_fresh_id_and_a_new_id_is_named_only_once_inserted(samples, most):
    inserts_seen = 0
    for text in samples:
        reply = parse_edits(text)
        assert not reply.problems and 1 <= len(reply.edits) <= most, text
        inserted: list[str] = []
        for edit in reply.edits:
            named = edit.args[2:] if edit.verb == "insert" else edit.args[:1] if edit.verb in ("replace", "remove") \
                else edit.args
            assert all(n not in FRESH or n in inserted for n in named), text  # no new id before its insert
            if edit.verb == "insert":
                assert edit.args[0] == FRESH[len(inserted)], text
                inserted.append(edit.args[0])
        inserts_seen += len(inserted)
        codes = {p.code for p in apply_edits(BASE, text, skip=True).problems}
        assert not codes & {"edit-duplicate-node", "edit-syntax", "edit-too-many"}, text
    assert inserts_seen > len(samples)  # the samples do insert


def test_the_bound_is_most_lines_and_small_samples_reach_it():
    counts = [len(parse_edits(t).edits) for t in SAMPLES]
    assert max(counts) == SMALL_EDITS_PER_REPLY and min(counts) == 1
    small = _lark(SMALL_EDITS_PER_REPLY)
    lines = "".join(f"replace {4 + i % 2}:GELU\n" for i in range(SMALL_EDITS_PER_REPLY))
    small.parse(f"##X##\n{lines}")
    with pytest.raises(lark.exceptions.LarkError):
        small.parse(f"##X##\n{lines}replace 4:ReLU\n")
    _lark().parse(f"##X##\n{lines}replace 4:ReLU\n")  # 24 by default


@pytest.mark.parametrize("reply", [
    "insert 9:BN after 2\ninsert 9:ReLU after 2\n",  # an id taken, as Gemma wrote it again and again
    "insert 10:BN after 2\n",  # the first insert takes 9
    "insert 9:BN after 2\ninsert 11:BN after 2\n",  # and the second 10
    "connect 3->9\n",  # 9 before it is inserted
    "insert 9:BN after 10\n",  # after a node not yet inserted
    "disconnect 9->5\n",
])
def test_the_grammar_refuses_ids_taken_or_not_yet_inserted(reply):
    parser = _lark()
    parser.parse("##X##\ninsert 9:BN after 2\ninsert 10:ReLU after 9\nconnect 3->10\ndisconnect 10->3\n")
    with pytest.raises(lark.exceptions.LarkError):
        parser.parse(f"##X##\n{reply}")


def test_the_grammars_without_a_parent_keep_their_forms():
    # the generic edit grammar bounds its lines too; a block reply's and the language's are as before
    generic = lark.Lark(render_grammar("lark", reply="edits", most=2))
    generic.parse("##X##\nadd 9:ReLU\nconnect 4->9\n")
    with pytest.raises(lark.exceptions.LarkError):
        generic.parse("##X##\nadd 9:ReLU\nconnect 4->9\nremove 9\n")
    with pytest.raises(ValueError):
        render_grammar("gbnf", reply="edits", most=EDITS_PER_REPLY + 1)
    with pytest.raises(ValueError):
        render_grammar("gbnf", reply="edits", most=0)


@pytest.mark.parametrize("reply", ["edits", "block"])
def test_a_replys_block_name_is_bounded(reply):
    parser = lark.Lark(render_grammar("lark", reply=reply))
    body = "replace 4:GELU\n" if reply == "edits" else "0:input\n1:output\n0->1\n"
    parser.parse(f"##{'N' * HEADER_CHARS}##\n{body}")
    with pytest.raises(lark.exceptions.LarkError):
        parser.parse(f"##{'N' * (HEADER_CHARS + 1)}##\n{body}")
    language = lark.Lark(render_grammar("lark"))  # a file's header is any length, as the compiler reads it
    language.parse(f"##{'N' * 200}##\n0:input\n1:output\n0->1\n")


def test_nadc_grammar_most_prints_the_bounded_grammar():
    run = run_nadc(["grammar", "--reply", "edits", "--parent", str(EXAMPLE), "--most", "8"])
    assert run.code == 0 and run.stdout == render_grammar("gbnf", reply="edits", parent=PARENT, most=8)
    assert "1 to 8 lines" in run.stdout and run.stdout != render_grammar("gbnf", reply="edits", parent=PARENT)
    refused = run_nadc(["grammar", "--most", "8"])
    assert refused.code == 2 and "--reply edits" in refused.stderr
    too_many = run_nadc(["grammar", "--reply", "edits", "--most", str(EDITS_PER_REPLY + 1)])
    assert too_many.code == 2 and "Traceback" not in too_many.stderr
