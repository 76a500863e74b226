"""Unit and property tests of the front end (nader.dsl.parser).

Columns are 1-based, end columns exclusive (see nader.dsl.span).
"""
from __future__ import annotations

import dataclasses

import pytest

from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue
from nader.dsl import block_files
from nader.dsl import parser as parser_module
from nader.dsl.parser import parse, parse_line
from nader.dsl.span import ColSpan, Span


def codes(result) -> list[str]:
    return [d.code.code for d in result.diagnostics]


def only_block(text: str, path: str = "t.nad"):
    result = parse(text, path)
    assert len(result.program.blocks) == 1, result.diagnostics
    return result, result.program.blocks[0]


def col_text(line: str, cols: ColSpan) -> str:
    return line[cols.col - 1:cols.end_col - 1]


# -- spans ---------------------------------------------------------------------

SPANNED = """\
##Res_Block##
0:input
1:output
  12:Conv2d(out_channels=C*2, kernel_size=(1,3))
0,1 -> 12
"""


def test_node_spans():
    result, block = only_block(SPANNED)
    lines = SPANNED.split("\n")
    conv = block.node(12)
    assert conv.span == Span(4, 3, 4, 49)
    assert col_text(lines[3], ColSpan(conv.span.col, conv.span.end_col)) == \
        "12:Conv2d(out_channels=C*2, kernel_size=(1,3))"
    assert col_text(lines[3], conv.id_span) == "12"
    assert col_text(lines[3], conv.op_span) == "Conv2d"
    assert block.node(0).span == Span(2, 1, 2, 8)


def test_arg_spans():
    _, block = only_block(SPANNED)
    line = SPANNED.split("\n")[3]
    out, kernel = block.node(12).args
    assert col_text(line, out.span) == "out_channels=C*2"
    assert col_text(line, out.name_span) == "out_channels"
    assert col_text(line, out.value.span) == "C*2"
    assert col_text(line, out.value.lhs.span) == "C"
    assert col_text(line, kernel.span) == "kernel_size=(1,3)"
    assert col_text(line, kernel.value.span) == "(1,3)"
    assert [col_text(line, item.span) for item in kernel.value.items] == ["1", "3"]
    assert block.node(12).arg_span("kernel_size") == Span.on_line(4, kernel.span)
    assert block.node(12).arg_span("stride") == Span.on_line(4, block.node(12).op_span)


def test_edge_spans():
    _, block = only_block(SPANNED)
    line = SPANNED.split("\n")[4]
    edge = block.edges[0]
    assert (edge.sources, edge.target) == ((0, 1), 12)
    assert edge.span == Span(5, 1, 5, 10)
    assert [col_text(line, c) for c in edge.source_spans] == ["0", "1"]
    assert col_text(line, edge.target_span) == "12"
    assert edge.source_span(1) == Span(5, 3, 5, 4)


def test_block_and_header_spans():
    _, block = only_block(SPANNED)
    assert block.header_span == Span(1, 1, 1, 14)
    assert block.span == Span(1, 1, 5, 10)


def test_diagnostic_spans_point_at_the_problem():
    text = "##A##\n0:input\n2:Conv2d(out_channels=C,kernel_size=3,group=2)\n3:Conv2D(out_channels=c)\n"
    result = parse(text, "t.nad")
    by_code = {d.code.code: d for d in result.diagnostics}
    lines = text.split("\n")
    assert col_text(lines[2], ColSpan(by_code["NAD105"].span.col, by_code["NAD105"].span.end_col)) == "group"
    assert col_text(lines[3], ColSpan(by_code["NAD104"].span.col, by_code["NAD104"].span.end_col)) == "Conv2D"
    assert col_text(lines[3], ColSpan(by_code["NAD109"].span.col, by_code["NAD109"].span.end_col)) == "c"
    assert all(d.file == "t.nad" and d.block == "A" for d in result.diagnostics)


# -- comments ----------------------------------------------------------------------

COMMENTED = """\
# about the first block
##A##  # header comment
# before input
0:input
1:output  # the output
0->1  # wire
# trailing of A

# leading of B
##B##
0:input
1:output
0->1
# trailing of B
"""


def test_comments_attach():
    result = parse(COMMENTED)
    assert result.diagnostics == []
    a, b = result.program.blocks
    assert a.leading_comments == ("# about the first block",)
    assert a.header_comment == "# header comment"
    assert a.node(0).leading_comments == ("# before input",)
    assert a.node(1).comment == "# the output"
    assert a.edges[0].comment == "# wire"
    # A comment before the next header belongs to that header, not to the block above.
    assert a.trailing_comments == ()
    assert b.leading_comments == ("# trailing of A", "# leading of B")
    assert b.trailing_comments == ("# trailing of B",)


def test_comment_trailing_spaces_are_dropped():
    _, block = only_block("##A##\n0:input   # c   \n")
    assert block.node(0).comment == "# c"


def test_comments_take_no_part_in_spans():
    _, block = only_block("##A##\n0:input   # c\n")
    assert block.node(0).span == Span(2, 1, 2, 8)


# -- whitespace and line endings ------------------------------------------------------

PLAIN = "##A##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3)\n0->2\n2->1\n"


def test_crlf_is_the_same_program():
    lf, crlf = parse(PLAIN), parse(PLAIN.replace("\n", "\r\n"))
    assert crlf.diagnostics == [] and crlf.program == lf.program
    for n_lf, n_crlf in zip(lf.program.blocks[0].nodes, crlf.program.blocks[0].nodes):
        assert n_lf.span == n_crlf.span


def test_mixed_line_endings_and_missing_final_newline():
    text = "##A##\r\n0:input\n1:output\r\n0->1"
    result = parse(text)
    assert result.diagnostics == []
    assert result.program.blocks[0].edges[0].span == Span(4, 1, 4, 5)


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf##A##\r\n0:input\r1:output\r\r\n0->1\r", b"\xef\xbb\xbf\xef\xbb\xbf##A##\n",
                                  b"##A##\n0:input\xff\n", b"\xef\xbb\xbf" + b"#" * 9000 + b"\xfe\n"])
def test_parse_file_reads_what_a_text_mode_read_gives(tmp_path, data):
    """One byte-order mark dropped, universal newlines, and for bad UTF-8 the byte a text-mode read names."""
    path = tmp_path / "b.nad"
    path.write_bytes(data)
    try:
        expected = parse(path.read_text(encoding="utf-8-sig"), str(path))
    except UnicodeDecodeError as error:
        expected = error
    result = block_files.parse_file(path)
    if isinstance(expected, UnicodeDecodeError):
        at = expected.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)  # the mark's bytes counted
        line = data.count(b"\n", 0, at) + 1
        assert [d.message for d in result.diagnostics] == [
            f"cannot read `{path}`: the block file is not UTF-8 text (byte {at} on line {line}); save it as UTF-8"]
    else:
        assert (result.source, result.program, result.diagnostics) == \
            (expected.source, expected.program, expected.diagnostics)


def test_trailing_spaces_and_tabs():
    text = "##A##  \n0:input \t\n\t1:output\n 0 ->\t1 \n"
    result, block = only_block(text)
    assert result.diagnostics == []
    assert block.node(0).span == Span(2, 1, 2, 8)
    assert block.node(1).span == Span(3, 2, 3, 10)  # a tab is one column
    assert block.edges[0].span == Span(4, 2, 4, 8)


def test_blank_lines_anywhere():
    text = "\n\n##A##\n\n0:input\n   \n\t\n1:output\n\n0->1\n\n\n"
    result, block = only_block(text)
    assert result.diagnostics == []
    assert [n.span.line for n in block.nodes] == [5, 8]
    assert block.edges[0].span.line == 10


def test_form_feed_is_blank_but_vertical_tab_is_not():
    """Blank lines are what the grammar ignores: space, tab, form feed, CR."""
    assert parse("##A##\n\f\n0:input\n").diagnostics == []
    assert codes(parse("##A##\n\v\n0:input\n")) == ["NAD101"]


def test_line_numbers_count_every_line():
    result = parse("# c\n\n##A##\n0:input\n0-1\n")
    (d,) = result.diagnostics
    assert (d.code.code, d.span.line) == ("NAD102", 5)


# -- edges -----------------------------------------------------------------------

@pytest.mark.parametrize("line, sources, target", [
    ("0->1", (0,), 1),
    ("0,2->7", (0, 2), 7),
    ("3,1,2->4", (3, 1, 2), 4),
    ("3 , 1 ,2 -> 4", (3, 1, 2), 4),
    ("10,11,12,13,14->15", (10, 11, 12, 13, 14), 15),
])
def test_edges(line, sources, target):
    _, block = only_block(f"##A##\n{line}\n")
    edge = block.edges[0]
    assert (edge.sources, edge.target) == (sources, target)
    assert len(edge.source_spans) == len(sources)
    assert [col_text(line, c) for c in edge.source_spans] == [str(s) for s in sources]
    assert list(block.wires()) == [(s, target, edge, i) for i, s in enumerate(sources)]


@pytest.mark.parametrize("line", ["0-1", "0>1", "0=>1", "0 1", "0 - > 1", "0 → 1"])
def test_bad_arrows(line):
    assert codes(parse(f"##A##\n{line}\n")) in (["NAD102"], ["NAD101"])


# -- arguments ------------------------------------------------------------------------

@pytest.mark.parametrize("op, args, param, expected", [
    ("permute", "0,2,3,1", "dims", (0, 2, 3, 1)),
    ("repeat", "1,1,2,2", "sizes", (1, 1, 2, 2)),
    ("reshape", "B,C,H*W", "shape", ("B", "C", "H*W")),
    ("reshape", "B,-1", "shape", ("B", "-1")),
])
def test_positional_variadic_args(op, args, param, expected):
    result, block = only_block(f"##A##\n2:{op}({args})\n")
    assert result.diagnostics == []
    node = block.node(2)
    assert all(a.name is None for a in node.args)
    value = node.params[param]
    assert isinstance(value, TupleValue)
    assert tuple(str(v) if not isinstance(v, Num) else v.value for v in value.items) == expected
    assert node.arg(param) is None  # a variadic parameter has no single argument


def test_variadic_given_by_keyword_as_tuple():
    result, block = only_block("##A##\n2:permute(dims=(0,2,3,1))\n")
    assert result.diagnostics == []
    assert str(block.node(2).params["dims"]) == "(0,2,3,1)"


def test_positional_binds_in_order():
    result, block = only_block("##A##\n2:Conv2d(C,3,2)\n")
    assert result.diagnostics == []
    node = block.node(2)
    assert {k: str(v) for k, v in node.params.items()} == \
        {"out_channels": "C", "kernel_size": "3", "stride": "2", "dilation": "1", "groups": "1", "bias": "1"}
    assert node.arg("stride") is node.args[2]


def test_tuples():
    _, block = only_block("##A##\n2:Conv2d(out_channels=C,kernel_size=(1,3),stride=(2,1))\n")
    kernel = block.node(2).params["kernel_size"]
    assert kernel == TupleValue((Num(1), Num(3)))
    assert str(kernel) == "(1,3)"
    assert str(block.node(2).params["stride"]) == "(2,1)"


def test_parenthesised_expression_is_not_a_tuple():
    _, block = only_block("##A##\n2:Conv2d(out_channels=(C+dim)//2,kernel_size=(3))\n")
    node = block.node(2)
    assert node.params["kernel_size"] == Num(3)
    assert node.params["out_channels"] == BinOp("//", BinOp("+", Sym("C"), Sym("dim")), Num(2))


@pytest.mark.parametrize("text, expected", [
    ("-1", Neg(Num(1))),
    ("-C", Neg(Sym("C"))),
    ("--1", Neg(Neg(Num(1)))),
    ("2*-H", BinOp("*", Num(2), Neg(Sym("H")))),
    ("C-1", BinOp("-", Sym("C"), Num(1))),
    ("C - -1", BinOp("-", Sym("C"), Neg(Num(1)))),
    ("1-2-3", BinOp("-", BinOp("-", Num(1), Num(2)), Num(3))),
    ("1+2*3", BinOp("+", Num(1), BinOp("*", Num(2), Num(3)))),
    ("C//2*2", BinOp("*", BinOp("//", Sym("C"), Num(2)), Num(2))),
    ("dim/4", BinOp("/", Sym("dim"), Num(4))),
])
def test_expressions(text, expected):
    _, block = only_block(f"##A##\n2:reshape({text})\n")
    (value,) = block.node(2).params["shape"].items
    assert value == expected
    reparsed = only_block(f"##A##\n2:reshape({value})\n")[1].node(2).params["shape"].items[0]
    assert reparsed == expected  # str() round-trips


@pytest.mark.parametrize("text, value", [
    ("0.2", 0.2), (".5", 0.5), ("1.", 1.0), ("1e-3", 0.001), ("2.5E+1", 25.0), ("0", 0),
])
def test_numbers(text, value):
    _, block = only_block(f"##A##\n2:DropPath(prob={text})\n")
    num = block.node(2).params["prob"]
    assert num == Num(value) and type(num.value) is type(value)


def test_defaults_are_filled_in():
    _, block = only_block("##A##\n2:MaxPool2d(kernel_size=3)\n3:DropPath\n")
    assert block.node(2).params["stride"] == Num(3)  # defaults to kernel_size
    assert block.node(3).params["prob"] == Num(0.0)


def test_empty_argument_list():
    result, block = only_block("##A##\n2:ReLU()\n")
    assert result.diagnostics == [] and block.node(2).args == ()


@pytest.mark.parametrize("line, code", [
    ("2:Conv2d(out_channels=C,kernel_size=3,group=4)", "NAD105"),
    ("2:Conv2d(out_channels=C,kernel_size=3,kernel_size=1)", "NAD106"),
    ("2:Conv2d(C,out_channels=C,kernel_size=1)", "NAD106"),
    ("2:concat(dim=1,2)", "NAD107"),
    ("2:Linear(C,dim)", "NAD107"),
    ("2:Conv2d(out_channels=c,kernel_size=3)", "NAD109"),
    ("2:Conv2D(out_channels=C,kernel_size=3)", "NAD104"),
    ("2:Conv2d(out_channels=C,kernel_size=3", "NAD103"),
    ("conv-1:ReLU", "NAD113"),
    ("2 ReLU", "NAD114"),
    ("2:Conv2d(out_channels=C,,kernel_size=3)", "NAD101"),
])
def test_argument_diagnostics(line, code):
    assert code in codes(parse(f"##A##\n{line}\n"))


# -- headers ----------------------------------------------------------------------------

@pytest.mark.parametrize("header, name, warns", [
    ("##A##", "A", False),
    ("## A ##", "A", False),
    ("###A###", "A", True),
    ("####ConvNeXt_Block####", "ConvNeXt_Block", True),
    ("###A##", "A", True),
    ("##resnet-1.5_stem##", "resnet-1.5_stem", False),
    ("##built-in function input_stem##", "built-in function input_stem", False),
])
def test_headers(header, name, warns):
    result, block = only_block(f"{header}\n0:input\n")
    assert block.name == name
    assert codes(result) == (["NAD116"] if warns else [])


@pytest.mark.parametrize("header", ["####", "##A", "##", "##Res<Net>##", "##A  B##"])
def test_malformed_headers(header):
    assert "NAD112" in codes(parse(f"{header}\n"))


def test_concat_alias_warns_and_is_canonicalised():
    result, block = only_block("##A##\n2:Concat(dim=1)\n")
    (d,) = result.diagnostics
    assert (d.code.code, d.is_error, d.span) == ("NAD115", False, Span(2, 3, 2, 9))
    assert block.node(2).op_name == "concat"
    assert block.node(2).params["dim"] == Num(1)


def test_missing_header_makes_one_block_named_after_the_file():
    result = parse("0:input\n1:output\n0->1\n", "models/my_block.nad")
    (block,) = result.program.blocks
    assert block.name == "my_block"
    assert [n.id for n in block.nodes] == [0, 1] and len(block.edges) == 1
    (d,) = result.diagnostics
    assert (d.code.code, d.is_error, d.span.line) == ("NAD111", False, 1)
    assert parse("0:input\n").program.blocks[0].name == "block"  # no file name


def test_lines_before_first_header():
    result = parse("0:input\n1:output\n##A##\n0:input\n")
    assert codes(result) == ["NAD110"]  # reported once
    assert result.diagnostics[0].span.line == 1
    (block,) = result.program.blocks
    assert block.name == "A" and [n.id for n in block.nodes] == [0]


def test_comments_before_header_are_fine():
    assert parse("# c\n\n##A##\n0:input\n").diagnostics == []


def test_several_blocks_and_duplicates_kept():
    result = parse("##A##\n0:input\n0:input\n##A##\n0:input\n")
    assert [b.name for b in result.program.blocks] == ["A", "A"]
    assert len(result.program.blocks[0].nodes) == 2  # structure checks report duplicates, not the parser


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "   \n\t\n"])
def test_empty_files(text):
    result = parse(text)
    assert codes(result) == ["NAD117"] and result.program.blocks == ()


def test_markdown_fence():
    result = parse("```\n##A##\n0:input\n```\n")
    assert codes(result) == ["NAD108", "NAD108"]
    assert result.program.blocks[0].name == "A"


def test_deep_nesting_is_a_diagnostic_not_a_crash():
    result = parse("##A##\n2:reshape(" + "-" * 4000 + "1)\n")
    assert codes(result) == ["NAD101"]
    assert "nested" in result.diagnostics[0].message


def test_parse_line_is_interned():
    assert parse_line("0:input") is parse_line("0:input")
    a = parse("##A##\n0:input\n").program.blocks[0].node(0)
    b = parse("\n\n##B##\n\n0:input\n").program.blocks[0].node(0)
    assert a == b and a.span.line != b.span.line


def test_line_spans_are_shared_across_files_and_kept_right(monkeypatch):
    monkeypatch.setattr(parser_module, "_MAX_SPANS", 2)  # the shared spans are dropped while parsing
    for text in ("##A##\n0:input\n1:ReLU\n0->1\n", "##B##\n1:ReLU\n0:input\n0->1\n", "##A##\n0:input\n1:ReLU\n0->1\n"):
        block = parse(text).program.blocks[0]
        assert [n.span for n in block.nodes] == [Span(2, 1, 2, len(text.split("\n")[1]) + 1),
                                                 Span(3, 1, 3, len(text.split("\n")[2]) + 1)]
        assert block.edges[0].span == Span(4, 1, 4, 5)


def test_parsed_nodes_and_edges_are_what_their_constructors_build():
    """The parser fills the slots of nodes and edges directly; every field (spans and the resolved
    operation included) is what the constructor gives, which `replace` re-runs."""
    text = "##A##\n0:input\n1:Conv2D(out_channels=C)\n# c\n2:Concat(dim=1)  # x\n3:frob\n0->1\n0,1->2  # e\n2->3\n"
    block = parse(text).program.blocks[0]
    assert len(block.nodes) == 4 and len(block.edges) == 3
    for item in (*block.nodes, *block.edges):
        rebuilt = dataclasses.replace(item)
        for f in dataclasses.fields(item):
            assert getattr(item, f.name) == getattr(rebuilt, f.name), (item, f.name)
        assert getattr(item, "opdef", None) is getattr(rebuilt, "opdef", None)
    assert block.nodes[2].op_name == "concat" and block.nodes[2].opdef is not None
    assert block.nodes[3].opdef is None and block.nodes[3].op is None
