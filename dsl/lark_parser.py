"""The Lark path of the front end: the grammar's LALR parser and the diagnostics of lines it rejects.

`grammar/nad.lark` defines the language. The parser builds the raw line pieces directly while it
parses (an inline transformer, no parse tree): the same `RawHeader`, `RawNode`, `EdgeLine` and
`ChainLine` that the fast path (nader.dsl.fast_lines) builds for the regular line forms. `read_alone` reads
a line the fast path declines (a broken line, mostly: a pass over many such lines would stop at
once); a broken line's Lark error is turned into a named diagnostic with a fix when one surely
applies. Imported only when a line is not one of the fast forms, so most `nadc` runs never
import Lark.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Optional, Union

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .. import grammar as grammar_package
from .expr import BinOp, Neg, Num, Sym, TupleValue
from .fast_lines import EdgeLine, Paren, RawHeader, RawLine, RawNode, chain_line
from .fast_lines import end_of as _end
from .fast_lines import start_of as _start
from .fast_lines import value_of as _value
from .ir import Arg, node_id
from .ops import lookup
from .parse_codes import (ADVICE, BLANK, HEADER_NAME, ID_PATTERN, INVALID_ARROW, INVALID_ID, INVALID_SYNTAX,
                          MALFORMED_HEADER, MARKDOWN_FENCE, MISSING_COLON, UNCLOSED_PAREN, Problem)
from .span import ColSpan

# `a-b`, `a=>b`, `a→b`, `0 2`: ids around something that is not `->`.
_EDGE_LIKE = re.compile(rf"^\s*(?P<sources>{ID_PATTERN}(?:\s*,\s*{ID_PATTERN})*)(?P<arrow>\s*[-=>~<\u2192\u2013\u2014]+\s*|\s+)"
                        rf"(?P<target>{ID_PATTERN})\s*(?:#.*)?$", re.ASCII)
_BAD_ID = re.compile(r"^\s*(?P<id>[^\s:#(),=]+)\s*:", re.ASCII)
_SPACED_OP = re.compile(rf"^\s*(?P<id>{ID_PATTERN})(?P<gap>\s+)(?P<op>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<paren>\(?)", re.ASCII)
_GLUED_OP = re.compile(r"^\s*(?P<id>\d+)(?P<op>[A-Za-z_][A-Za-z0-9_]*)", re.ASCII)
_FENCE_LINE = re.compile(r"^\s*(?:`{3,}|~{3,})[^`~]*$")
_TERMINAL_TEXT = {
    "INT": "an integer", "ID": "a node id", "FLOAT": "a decimal number", "NAME": "a name", "LPAR": "`(`", "RPAR": "`)`",
    "COMMA": "`,`", "COLON": "`:`", "EQUAL": "`=`", "PLUS": "`+`", "MINUS": "`-`", "STAR": "`*`",
    "SLASH": "`/`", "__ANON_0": "`->`", "HEADER": "a header", "COMMENT": "a comment", "$END": "end of line",
}


class _LineBuilder(Transformer):
    """Builds the raw pieces of a line while Lark parses it (`Lark(transformer=...)`): no parse tree.

    Positions come from the tokens, so `(`, `)` and unary `-` are named terminals.
    """

    def int(self, ch):
        t = ch[0]
        return Num(int(t), ColSpan(t.column, t.end_column))

    def float(self, ch):
        t = ch[0]
        return Num(float(t), ColSpan(t.column, t.end_column))

    def symbol(self, ch):
        t = ch[0]
        return Sym(str(t), ColSpan(t.column, t.end_column))

    def paren(self, ch):
        return Paren(_value(ch[1]), ch[0].column, ch[2].end_column)

    def neg(self, ch):
        return Neg(_value(ch[1]), ColSpan(ch[0].column, _end(ch[1])))

    def _bin(op):  # noqa: N805 - builds the five binary-operator callbacks
        def build(self, ch):
            lhs, rhs = ch
            return BinOp(op, _value(lhs), _value(rhs), ColSpan(_start(lhs), _end(rhs)))
        return build

    add, sub, mul, div, floordiv = _bin("+"), _bin("-"), _bin("*"), _bin("/"), _bin("//")

    def tuple(self, ch):
        return TupleValue(tuple(_value(x) for x in ch[1:-1]), ColSpan(ch[0].column, ch[-1].end_column))

    def keyword_arg(self, ch):
        name, value = ch
        return Arg(str(name), _value(value), ColSpan(name.column, _end(value)), ColSpan(name.column, name.end_column))

    def positional_arg(self, ch):
        value = ch[0]
        return Arg(None, _value(value), ColSpan(_start(value), _end(value)))

    def call(self, ch):
        return tuple(a for a in ch[1:-1] if a is not None), ch[-1].end_column

    def node(self, ch):
        ident, op = ch[0], ch[1]
        args, end = ch[2] if len(ch) > 2 and ch[2] is not None else ((), op.end_column)
        return RawNode(node_id(ident), str(op), args, ColSpan(ident.column, end),
                       ColSpan(ident.column, ident.end_column), ColSpan(op.column, op.end_column))

    def edge(self, ch):
        hops = [h for h in ch if type(h) is tuple]  # `->d` of a chain `a->b->c`, from `hop`
        ch = ch[:len(ch) - len(hops)]
        first = EdgeLine(tuple(node_id(t) for t in ch[:-1]), node_id(ch[-1]), ColSpan(ch[0].column, ch[-1].end_column),
                         tuple(ColSpan(t.column, t.end_column) for t in ch[:-1]),
                         ColSpan(ch[-1].column, ch[-1].end_column))
        return chain_line(first, hops) if hops else first

    def hop(self, ch):
        t = ch[0]
        return node_id(t), ColSpan(t.column, t.end_column)

    def line(self, ch) -> RawLine:
        item, comment = None, None
        for part in ch:
            if type(part) is Token:
                if part.type == "COMMENT":
                    comment = str(part).rstrip()
                else:
                    item = RawHeader(str(part), ColSpan(part.column, part.end_column))
            else:
                item = part
        return item, comment

    def lines(self, ch):
        return None  # a whole file (`start="program"`) is only checked: the front end reads lines

    def program(self, ch):
        return None


@lru_cache(maxsize=1)
def _lark() -> Lark:
    # Found beside the package's __init__ rather than with importlib.resources, whose import and
    # lookup cost ~5 ms in every process that meets a line only Lark reads.
    grammar = Path(grammar_package.__file__).with_name("nad.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", start=["line", "program"], transformer=_LineBuilder(),
                maybe_placeholders=True, cache=True)


def lark_grammar_parser() -> Lark:
    """The Lark parser of the whole language (`start="program"` for whole files).

    It builds IR pieces as it parses (an inline transformer), not a parse tree.
    """
    return _lark()


def read_alone(text: str) -> Union[RawLine, Problem]:
    """One line read by the grammar's parser: its pieces, or the diagnostic of its syntax error."""
    try:
        return _lark().parse(text, start="line")
    except UnexpectedInput as error:
        return _classify_error(text, error)


def _parses(text: str) -> bool:
    """Whether a line parses with no syntax problem (a candidate fix is checked with this)."""
    try:
        _lark().parse(text, start="line")
    except UnexpectedInput:
        return False
    header = _HEADER_TOKEN.match(text)
    return header is None or HEADER_NAME.fullmatch(header.group("name").strip()) is not None


_HEADER_TOKEN = re.compile(r"^\s*#{2,}(?P<name>[^#\r\n]*)#{2,}")


def _code_end(text: str) -> int:
    """The column just after a line's code: before its comment and trailing blanks."""
    code = text.split("#", 1)[0] if not text.lstrip().startswith("#") else text
    return len(code.rstrip(BLANK)) + 1


def _fixed(text: str, cols: ColSpan, replacement: str) -> Optional[tuple[str, tuple[ColSpan, str]]]:
    """The line with `cols` replaced, and the edit, if the result parses."""
    candidate = text[:cols.col - 1] + replacement + text[cols.end_col - 1:]
    return (candidate, (cols, replacement)) if _parses(candidate) else None


def _shown(line: str) -> str:
    """A line as a help text quotes it: without comment and surrounding blanks."""
    return (line if line.lstrip().startswith("#") else line.split("#", 1)[0]).strip(BLANK)


def _classify_error(text: str, error: UnexpectedInput) -> Problem:
    """Turn a raw Lark error on one line into a named diagnostic.

    A help that proposes new text comes with the edit that writes it, and only
    when the edited line parses; otherwise the help is advice.
    """
    stripped = text.strip()
    start = len(text) - len(text.lstrip()) + 1
    whole = ColSpan(start, start + len(stripped))
    if "```" in text:
        at = text.index("```") + 1
        if _FENCE_LINE.match(text):
            return Problem(MARKDOWN_FENCE, ColSpan(at, at + 3), "markdown code fence in a block file",
                           "delete the fence line", (ColSpan(1, len(text) + 1), ""))
        return Problem(MARKDOWN_FENCE, ColSpan(at, at + 3), "markdown code fence in a block file",
                       ADVICE[MARKDOWN_FENCE])
    if stripped.startswith("##"):
        name = stripped.strip("#").strip()
        fix = _fixed(text, whole, f"##{name}##") if name else None
        if fix:
            return Problem(MALFORMED_HEADER, whole, "header is not closed with `##`", f"write `##{name}##`", fix[1])
        return Problem(MALFORMED_HEADER, whole, "header is not closed with `##`", ADVICE[MALFORMED_HEADER])
    opened = []
    for i, ch in enumerate(text):
        if ch == "(":
            opened.append(i)
        elif ch == ")":
            if not opened:
                cols = ColSpan(i + 1, i + 2)
                fix = _fixed(text, cols, "")
                if fix:
                    return Problem(INVALID_SYNTAX, cols, "unmatched `)`", f"remove it: `{_shown(fix[0])}`", fix[1])
                return Problem(INVALID_SYNTAX, cols, "unmatched `)`", "remove it or add the `(` it closes")
            opened.pop()
        elif ch == "#":
            break
    if opened:
        at = opened[-1] + 1
        end = _code_end(text)
        fix = _fixed(text, ColSpan(end, end), ")")
        if fix:
            return Problem(UNCLOSED_PAREN, ColSpan(at, at + 1), "`(` is never closed",
                           f"close it at the end of the line: `{_shown(fix[0])}`", fix[1])
        return Problem(UNCLOSED_PAREN, ColSpan(at, at + 1), "`(` is never closed", ADVICE[UNCLOSED_PAREN])
    colon = _missing_colon(text)
    if colon is not None:
        return colon
    edge = _EDGE_LIKE.match(text)
    if edge and (edge.group("arrow").strip() or _all_integers(edge)):
        arrow = edge.group("arrow").strip()
        what = f"`{arrow}`" if arrow else "a space"
        message = f"edge written with {what} instead of `->`"
        if "<" not in arrow:
            fix = _fixed(text, ColSpan(edge.start("arrow") + 1, edge.end("arrow") + 1), "->")
            if fix:
                return Problem(INVALID_ARROW, whole, message, f"write `{_shown(fix[0])}`", fix[1])
        return Problem(INVALID_ARROW, whole, message, ADVICE[INVALID_ARROW])
    bad_id = _BAD_ID.match(text)
    if bad_id and not re.fullmatch(ID_PATTERN, bad_id.group("id"), re.ASCII):
        written = bad_id.group("id")
        span = ColSpan(bad_id.start("id") + 1, bad_id.end("id") + 1)
        message = f"node id `{written}` has characters other than letters, digits and `_`"
        clean = re.sub(r"[^A-Za-z0-9_]+", "_", written)
        fix = _fixed(text, span, clean) if clean.strip("_") else None
        if fix:
            return Problem(INVALID_ID, span, message, f"write `{_shown(fix[0])}`", fix[1])
        return Problem(INVALID_ID, span, message, ADVICE[INVALID_ID])
    return _generic_error(text, error)


def _all_integers(edge: re.Match) -> bool:
    ids = re.split(r"\s*,\s*", edge.group("sources")) + [edge.group("target")]
    return all(i.isdigit() for i in ids)


def _missing_colon(text: str) -> Optional[Problem]:
    """`2 Conv2d(...)`, `conv1 ReLU`, `2ReLU`: an id and an operation without the `:` between."""
    spaced = _SPACED_OP.match(text)
    if spaced and (spaced.group("paren") or lookup(spaced.group("op"))):
        cols = ColSpan(spaced.start("gap") + 1, spaced.end("gap") + 1)
    else:
        glued = _GLUED_OP.match(text)
        if not glued or not lookup(glued.group("op")):
            return None
        at = glued.end("id") + 1
        cols = ColSpan(at, at)
    message = "missing `:` between the node id and its operation"
    where = ColSpan(cols.col, cols.col + 1)
    fix = _fixed(text, cols, ":")
    if fix:
        return Problem(MISSING_COLON, where, message, f"write `{_shown(fix[0])}`", fix[1])
    return Problem(MISSING_COLON, where, message, ADVICE[MISSING_COLON])


def _generic_error(text: str, error: UnexpectedInput) -> Problem:
    col = max(getattr(error, "column", 1) or 1, 1)
    if isinstance(error, UnexpectedCharacters):
        ch = text[col - 1] if col - 1 < len(text) else ""
        return Problem(INVALID_SYNTAX, ColSpan(col, col + 1), f"unexpected character `{ch}`", ADVICE[INVALID_SYNTAX])
    expected = sorted({_TERMINAL_TEXT.get(t, f"`{t}`") for t in getattr(error, "expected", set()) or set()
                       if t not in ("COMMENT", "_NL")})
    wanted = ", ".join(expected) if expected else "something else"
    if isinstance(error, UnexpectedEOF) or (isinstance(error, UnexpectedToken) and error.token.type == "$END"):
        end = len(text.rstrip()) + 1
        return Problem(INVALID_SYNTAX, ColSpan(end, end + 1), f"line ends early; expected {wanted}",
                       "complete the line")
    tok = error.token  # type: ignore[attr-defined]
    width = max(len(str(tok)), 1)
    return Problem(INVALID_SYNTAX, ColSpan(col, col + width), f"unexpected `{tok}`; expected {wanted}",
                   ADVICE[INVALID_SYNTAX])

