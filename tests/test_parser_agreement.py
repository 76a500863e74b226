"""The front end against its grammar and hostile text: the Lark grammar and the line parser agree,
and parsing never raises (nader.dsl.parser). The unit tests are in test_parser.py.
"""
from __future__ import annotations

import re

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from lark.exceptions import LarkError

from text_strategies import mutated_texts
from test_parser import COMMENTED, PLAIN
from nader.dsl import parser as parser_module
from nader.dsl.parser import grammar_parser, parse, parse_line


# -- the Lark grammar and the line parser agree ----------------------------------------

#: Codes the line parser reports when the line grammar rejects a line.
GRAMMAR_CODES = {"NAD101", "NAD102", "NAD103", "NAD108", "NAD113", "NAD114"}


def line_parser_accepts(text: str) -> bool:
    """True when no line failed the grammar (names, structure and headers' names aside)."""
    for d in parse(text).diagnostics:
        if d.code.code in GRAMMAR_CODES:
            return False
        if d.code.code == "NAD112" and "not closed" in d.message:  # `##Name`: not a HEADER token
            return False
    return True


def lark_accepts(text: str) -> bool:
    try:
        grammar_parser().parse(text, start="program")
    except LarkError:
        return False
    return True


def check_agreement(text: str) -> None:
    result = parse(text)
    assume(not any("nested more than" in d.message for d in result.diagnostics))
    assert lark_accepts(text) == line_parser_accepts(text), (text, result.diagnostics)
    if result.syntax_ok:
        assert lark_accepts(text)


VALID_LINES = [
    "##A##", "###B_stem###", "## C ##", "0:input", "1:output", "0:input1", "1:input2",
    "2:Conv2d(out_channels=C,kernel_size=3,stride=1)", "3:BN", "4:ReLU()", "5:Add",
    "6:Conv2d(out_channels=dim*2,kernel_size=(1,3),groups=C//4)", "7:permute(0,2,3,1)",
    "8:reshape(B,-1,H*W)", "9:DropPath(prob=0.2)", "10:Concat(dim=1)", "0->2", "0,1->5", "2 -> 3",
    "# comment", "0->1  # wire", "", "   ", "\t", "\f",
]
LINE_ALPHABET = "0123456789:,->#()=*/+ \t.ABCHWdimxyzReLU_`\r\v"

line_strategy = st.one_of(
    st.sampled_from(VALID_LINES),
    st.text(alphabet=LINE_ALPHABET, max_size=40),
    st.builds(lambda line, i, ch: line[:i] + ch + line[i + 1:],
              st.sampled_from(VALID_LINES), st.integers(0, 50), st.sampled_from(LINE_ALPHABET)),
)
file_strategy = st.builds(lambda lines, sep, end: sep.join(lines) + end,
                          st.lists(line_strategy, max_size=12), st.sampled_from(["\n", "\r\n"]),
                          st.sampled_from(["", "\n", "\r\n"]))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(file_strategy)
@example(PLAIN)
@example(COMMENTED)
@example("##A##\n\v\n0:input\n")
@example("##A##\n0:input\x0c\n")
@example("##A##B##\n")
@example("##A\n")
@example("####\n")
@example("0:input\n##A##\n")
@example("")
@example("0:input\r1:output\n")
def test_lark_program_and_line_parser_agree(text):
    check_agreement(text)


def _spelled(value) -> object:
    """Everything about a parsed line, spans included (IR equality ignores spans)."""
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_spelled(v) for v in value]]
    if hasattr(value, "__dataclass_fields__"):
        return [type(value).__name__, {name: _spelled(getattr(value, name)) for name in value.__dataclass_fields__}]
    if isinstance(value, dict):
        return {k: _spelled(v) for k, v in value.items()}
    return repr(value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(st.one_of(file_strategy, mutated_texts(max_blocks=2)))
@example("##A##\n2:Conv2d(out_channels=-(C//2)*(2),kernel_size=((3)))\n3:reshape((B),-(1),(H)*W)  # x\n0,1->2\n")
def test_one_pass_over_new_lines_equals_parsing_each_line_alone(text):
    """The front end parses a file's new lines in one pass; each line's result, spans and
    diagnostics included, is what parsing that line alone gives."""
    parse_line.cache_clear()
    parse(text)
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")] if "\r" in text \
        else text.split("\n")
    for line in lines:
        if line.strip(" \t\f\r"):
            assert _spelled(parser_module._LINES[line]) == _spelled(parser_module._parse_one(line)), line


def test_agreement_on_known_cases():
    """The oracle itself discriminates: some files are accepted, some rejected."""
    assert lark_accepts(PLAIN) and line_parser_accepts(PLAIN)
    for bad in ("##A##\n0-1\n", "##A\n", "```\n", "2:Conv2d(out_channels=C\n", "conv-1:ReLU\n", "2 ReLU\n"):
        assert not lark_accepts(bad) and not line_parser_accepts(bad), bad
    # Lark accepts these; the line parser only adds non-grammar diagnostics.
    for other in ("####\n", "##Res<Net>##\n", "0:input\n##A##\n", "2:Conv2D\n", ""):
        assert lark_accepts(other) and line_parser_accepts(other), other


# -- robustness --------------------------------------------------------------------------

def _check_result(text: str) -> None:
    result = parse(text, "r.nad")
    n_lines = text.count("\n") + 1
    for d in result.diagnostics:
        assert 1 <= d.span.line <= n_lines and d.span.col >= 1 and d.span.end_col >= d.span.col, d
        assert d.file == "r.nad"
    for block in result.program.blocks:
        for item in (*block.nodes, *block.edges):
            assert 1 <= item.span.line <= n_lines
        str(block)  # the dump never raises either


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400))
def test_parse_never_raises_on_random_text(text):
    _check_result(text)


@settings(max_examples=400, deadline=None)
@given(file_strategy)
def test_parse_never_raises_on_near_valid_text(text):
    _check_result(text)


def test_no_eval_of_input():
    """Names in expressions are symbols, never looked up in Python."""
    result = parse("##A##\n2:reshape(__import__,os,exit)\n")
    assert {d.code.code for d in result.diagnostics} == {"NAD109"}
    assert re.search(r"unknown symbol `__import__`", result.diagnostics[0].message)
