"""Chain edges `a->b->c` (issue 39): read as their edges by both readers, written one a line by `nadc fmt`.

GPT-4o wrote SE blocks with chains (`6->7->8->9`); the parser stopped at those lines and the repair
then deleted the `Mul` the chain fed. Now the language accepts a chain as the edges it spells.
"""
from __future__ import annotations

from conftest import run_nadc
from nader.compiler.grammar_export import render_grammar
from nader.compiler.passes.canonical import canonical_hash
from nader.compiler.passes.verify import verify_program
from nader.compiler.repair import repair_text
from nader.dsl.extract import extract_blocks
from nader.dsl.fast_lines import read_line
from nader.dsl.format import format_source
from nader.dsl.lark_parser import read_alone
from nader.dsl.parser import parse

SE_NODES = """##SEBlock##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=1)
3:AdaptiveAvgPool2d(output_size=1)
4:Conv2d(out_channels=C/4,kernel_size=1,stride=1)
5:ReLU
6:Conv2d(out_channels=C,kernel_size=1,stride=1)
7:Sigmoid
8:Mul
"""
SE_CHAINED = SE_NODES + "0->2->3->4->5->6->7  # squeeze and excite\n2,7->8->1\n"
SE_SPLIT = SE_NODES + "0->2  # squeeze and excite\n2->3\n3->4\n4->5\n5->6\n6->7\n2,7->8\n8->1\n"


def test_a_chain_is_its_edges_in_order_with_spans_on_its_line():
    result = parse(SE_CHAINED)
    assert result.ok, result.diagnostics
    (block,) = result.program.blocks
    assert [(e.sources, e.target) for e in block.edges] == [
        ((0,), 2), ((2,), 3), ((3,), 4), ((4,), 5), ((5,), 6), ((6,), 7), ((2, 7), 8), ((8,), 1)]
    assert block.edges[0].comment == "# squeeze and excite" and block.edges[1].comment is None
    line = SE_CHAINED.split("\n")[11]  # `2,7->8->1`
    last = block.edges[-1]
    assert last.span.line == 12 and line[last.span.col - 1:last.span.end_col - 1] == "8->1"
    assert line[last.target_span.col - 1:last.target_span.end_col - 1] == "1"
    assert parse(SE_SPLIT).program == result.program


def test_both_readers_read_a_chain_alike():
    for line in ("7->13->1", " a , b -> c->d -> e  # c", "x_1->2a->3"):
        assert read_line(line) is not None and read_line(line) == read_alone(line), line
    for broken in ("0->1->", "0->1,2->3", "0->->1"):
        assert read_line(broken) is None and read_alone(broken).code.code in ("NAD101", "NAD102"), broken


def test_nadc_fmt_writes_one_edge_a_line_and_the_hash_is_the_split_blocks():
    out = format_source(SE_CHAINED)
    assert out.ok and out.text == SE_SPLIT
    (chained,), _ = verify_program(parse(SE_CHAINED))
    (split,), _ = verify_program(parse(SE_SPLIT))
    assert chained.ok and canonical_hash(chained.block) == canonical_hash(split.block)
    run = run_nadc(["fmt", "-"], stdin=SE_CHAINED)
    assert run.code == 0 and run.stdout == SE_SPLIT


def test_a_chained_se_block_needs_no_repair_and_a_repaired_chain_is_written_one_edge_a_line():
    assert not repair_text(SE_CHAINED, unsafe=True).changed
    # the chain closes a cycle (7->5): the repair changes one of its edges, and the line becomes its edges
    text = SE_CHAINED.replace("0->2->3->4->5->6->7", "0->2->3->4->5->6->7->5")
    result = repair_text(text, unsafe=True)
    assert result.ok
    lines = result.text.split("\n")
    assert lines[10] == "0->2  # squeeze and excite" and lines[11:16] == ["2->3", "3->4", "4->5", "5->6", "6->7"]
    assert "7->5" not in result.text and parse(result.text).ok


def test_the_language_grammar_has_chains_and_the_reply_grammars_do_not():
    assert '"->" node-id ("->" node-id)*' in render_grammar("ebnf")
    for reply in ("block", "edits"):
        assert '("->" node-id)*' not in render_grammar("ebnf", reply=reply)


def test_reply_extraction_keeps_chain_lines():
    extraction = extract_blocks("Here it is:\n```\n" + SE_CHAINED + "```\n")
    assert extraction.text.strip() == SE_CHAINED.strip()
