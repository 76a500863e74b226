"""The front end's fast path: the regular line forms, read with compiled regular expressions.

A pure accelerator. The grammar (grammar/nad.lark) stays the one definition of the language and
Lark's LALR parser its reference reader. `read_line` reads only the forms agents write all the
time (headers, `ID:Op(k=v,...)` node lines, `a,b->c` edges and `a->b->c` chains, comments), cut
where the grammar's lexer cuts its tokens, and builds exactly what the Lark parser's inline
transformer builds (`RawHeader`, `RawNode`, `EdgeLine`, `ChainLine`, the same expression objects
with the same column spans). For
any other line, including every line with a syntax error, it returns None and the caller parses
the line with Lark: every syntax diagnostic, its recovery and its spans come from the grammar.
tests/test_fast_lines.py checks that both readers give identical results.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Optional, Union

from .expr import BinOp, Neg, Num, Sym, TupleValue, Value
from .ir import Arg, NodeId, node_id
from .span import ColSpan


class RawHeader(NamedTuple):
    """A `##Name##` token as written; the parser checks the name."""

    text: str
    cols: ColSpan


class RawNode(NamedTuple):
    """A node line before its operation and arguments are checked."""

    id: NodeId
    op_name: str
    args: tuple[Arg, ...]
    cols: ColSpan
    id_cols: ColSpan
    op_cols: ColSpan


class EdgeLine(NamedTuple):
    sources: tuple[NodeId, ...]
    target: NodeId
    cols: ColSpan
    source_cols: tuple[ColSpan, ...]
    target_cols: ColSpan


class ChainLine(NamedTuple):
    """`a,b->c->d`: a path on one line, read as its edges in order (`a,b->c`, then `c->d`); each
    edge's columns run from its first source to its target, so neighbouring edges share an id."""

    edges: tuple[EdgeLine, ...]
    cols: ColSpan


def chain_line(first: EdgeLine, hops: list[tuple[NodeId, ColSpan]]) -> ChainLine:
    """The chain of `first` (`a,b->c`) followed by `->d`, `->e`, ... (`hops`: each id and its columns)."""
    edges = [first]
    for target, cols in hops:
        previous = edges[-1]
        edges.append(EdgeLine((previous.target,), target, ColSpan(previous.target_cols.col, cols.end_col),
                              (previous.target_cols,), cols))
    return ChainLine(tuple(edges), ColSpan(first.cols.col, edges[-1].cols.end_col))


class Paren(NamedTuple):
    """A parenthesised expression while its line is built: the value, and where its parentheses are.

    An argument or an operation that starts or ends with `(...)` spans the parentheses; the
    value inside keeps its own span.
    """

    value: Value
    col: int
    end_col: int


def value_of(x) -> Value:
    return x.value if type(x) is Paren else x


def start_of(x) -> int:
    return x.col if type(x) is Paren else x.span.col


def end_of(x) -> int:
    return x.end_col if type(x) is Paren else x.span.end_col


#: What a line holds once read: the item (None for a comment line) and the comment text.
RawLine = tuple[Union[RawHeader, RawNode, EdgeLine, ChainLine, None], Optional[str]]

# Blanks the grammar ignores between tokens; a line with `\r` inside goes to Lark.
_WS = "[ \t\f]*"
_ID = "[A-Za-z0-9_]+"
_NAME = "[A-Za-z_][A-Za-z0-9_]*"
_NODE_HEAD = re.compile(rf"{_WS}({_ID}){_WS}:{_WS}({_NAME}){_WS}")
# An edge line, up to its end (what may follow an edge is the same as after any item: `_TAIL`).
_EDGE = re.compile(rf"{_WS}({_ID}(?:{_WS},{_WS}{_ID})*){_WS}->{_WS}({_ID}){_WS}(#(?!#).*)?\Z")
# A chain `a,b->c->d`: group 2 holds its targets (`c->d`). Compiled when a line first has two arrows.
_CHAIN_PATTERN = rf"{_WS}({_ID}(?:{_WS},{_WS}{_ID})*){_WS}->{_WS}({_ID}(?:{_WS}->{_WS}{_ID})+){_WS}(#(?!#).*)?\Z"
_IDS = re.compile(_ID)
# The grammar's HEADER terminal as the grammar's lexer matches it (atomic: the tail cannot take
# hashes back from it), up to the line's end.
_HEADER = re.compile(rf"{_WS}((?>#{{2,}}[^#\r\n]*#{{2,}})){_WS}(#(?!#).*)?\Z")
# What may end a line: nothing, or a comment (one `#`, then the rest of the line).
_TAIL = re.compile(r"(#(?!#).*)?\Z")
# Tokens inside a call. A number must not run into a letter, digit or `.` (`2C`, `1e`, `1.`,
# `.5`: the grammar's lexer splits or reads those otherwise); such lines go to Lark.
_TOKEN = re.compile(rf"{_WS}(?:([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![A-Za-z0-9_.])|({_NAME})|(//|[-+*/(),=]))")
# Past these, a line goes to Lark: deep nesting (the reader below recurses) and huge numbers.
_MAX_LEN, _MAX_NESTING = 400, 40


class _Decline(Exception):
    """The line is not one of the fast forms."""


# Builds a NamedTuple (ColSpan, RawNode, ...) from a tuple of its fields without the Python-level
# __new__ that calling the class runs (hot path).
_new = tuple.__new__


def header_token(line: str) -> Optional[str]:
    """A header line's `##Name##` token as the grammar reads it (a comment after it left out), or
    None for any other line: how a reply's block is named (compiler.block_text.block_name)."""
    header = _HEADER.match(line) if len(line) <= _MAX_LEN else None
    return None if header is None else header.group(1)


def read_line(text: str) -> Optional[RawLine]:
    """The line's item and comment as the grammar reads them, or None when Lark must read it."""
    if len(text) > _MAX_LEN or "\r" in text or "\n" in text:
        return None
    if text[:1] != "#":  # headers and comments (one per block or so, each new) cannot be nodes or edges
        head = _NODE_HEAD.match(text)
        if head is not None:
            return _node(text, head)
        edge = _EDGE.match(text)
        if edge is not None:
            return _edge(text, edge)
        chain = re.match(_CHAIN_PATTERN, text) if text.count("->") > 1 else None
        if chain is not None:
            return _chain(text, chain)
    header = _HEADER.match(text)
    if header is not None:
        start, end = header.span(1)
        return _new(RawHeader, (header.group(1), _new(ColSpan, (start + 1, end + 1)))), _comment(header, 2)
    start = len(text) - len(text.lstrip(" \t\f"))
    tail = _TAIL.match(text, start)
    if tail is None or tail.group(1) is None:
        return None
    return None, _comment(tail)


def _comment(tail: re.Match, group: int = 1) -> Optional[str]:
    comment = tail.group(group)
    return comment.rstrip() if comment is not None else None


def _edge(text: str, edge: re.Match) -> RawLine:
    sources_text = edge.group(1)
    if "," in sources_text:
        sources = list(_IDS.finditer(text, edge.start(1), edge.end(1)))
        source_ids = tuple(node_id(m.group()) for m in sources)
        source_cols = tuple(_new(ColSpan, (m.start() + 1, m.end() + 1)) for m in sources)
    else:  # one source: the group is its id
        start, end = edge.span(1)
        source_ids, source_cols = (node_id(sources_text),), (_new(ColSpan, (start + 1, end + 1)),)
    start, end = edge.span(2)
    target_cols = _new(ColSpan, (start + 1, end + 1))
    item = _new(EdgeLine, (source_ids, node_id(edge.group(2)), _new(ColSpan, (source_cols[0].col, end + 1)),
                           source_cols, target_cols))
    return item, _comment(edge, 3)


def _chain(text: str, chain: re.Match) -> RawLine:
    sources = list(_IDS.finditer(text, chain.start(1), chain.end(1)))
    targets = list(_IDS.finditer(text, chain.start(2), chain.end(2)))
    source_cols = tuple(_new(ColSpan, (m.start() + 1, m.end() + 1)) for m in sources)
    first_cols = _new(ColSpan, (targets[0].start() + 1, targets[0].end() + 1))
    first = EdgeLine(tuple(node_id(m.group()) for m in sources), node_id(targets[0].group()),
                     ColSpan(source_cols[0].col, first_cols.end_col), source_cols, first_cols)
    hops = [(node_id(m.group()), ColSpan(m.start() + 1, m.end() + 1)) for m in targets[1:]]
    return chain_line(first, hops), _comment(chain, 3)


def _node(text: str, head: re.Match) -> Optional[RawLine]:
    id_start, id_end = head.span(1)
    op_start, op_end = head.span(2)
    pos = head.end()
    args, end = (), op_end + 1
    if pos < len(text) and text[pos] == "(":
        if text.count("(") + text.count("-") > _MAX_NESTING:
            return None
        try:
            args, end, pos = _call(text, pos)
        except _Decline:
            return None
        while pos < len(text) and text[pos] in " \t\f":
            pos += 1
    tail = _TAIL.match(text, pos)
    if tail is None:
        return None
    item = _new(RawNode, (node_id(head.group(1)), head.group(2), args, _new(ColSpan, (id_start + 1, end)),
                          _new(ColSpan, (id_start + 1, id_end + 1)), _new(ColSpan, (op_start + 1, op_end + 1))))
    return item, _comment(tail)


# -- the call: `"(" [arg ("," arg)*] ")"` -------------------------------------------------
# Arguments repeat across distinct lines at the same columns (`kernel_size=3` after `2:Conv2d(`),
# and what an argument reads as depends only on its text and its column: each distinct argument
# text at a position is read once. Most arguments are `name=` or nothing, then an atom, `atom op
# atom` or a tuple of atoms (an atom: an integer or a name, negated or not): one match reads such
# an argument and the `,` or `)` after it. Any other argument is read from its tokens by a
# recursive-descent reader of the grammar's `arg` rule.

_ATOM = rf"(-{_WS})?([0-9]+|{_NAME})"  # an atom, negated or not
_SIMPLE_ARG = re.compile(rf"{_WS}(?:({_NAME}){_WS}={_WS})?{_ATOM}(?:{_WS}(//|[-+*/]){_WS}{_ATOM})?{_WS}([,)])")
# A tuple of atoms (`kernel_size=(1,3)`, `dim=(-1,-2)`), its items then read one by one.
_ITEM = rf"{_WS}(?:-{_WS})?(?:[0-9]+|{_NAME}){_WS}"
_TUPLE_ARG = re.compile(rf"{_WS}(?:({_NAME}){_WS}={_WS})?(\((?:{_ITEM},)+{_ITEM}\)){_WS}([,)])")
_TUPLE_ITEM = re.compile(rf"{_WS}{_ATOM}")
_EMPTY_CALL = re.compile(rf"\({_WS}\)")
# An argument's text with the `,` or `)` that ends it, when its parentheses nest one level at most.
_ARG_TEXT = re.compile(r"[^,()]*(?:\([^()]*\)[^,()]*)*[,)]")
# (argument text, position) -> (argument, the `,` or `)` after it, the position after that)
_ARGS: dict[tuple[str, int], tuple[Arg, str, int]] = {}
_MAX_ARGS = 1 << 16


def forget() -> None:
    """Drops the arguments read so far (the parser forgets its interned lines with them)."""
    _ARGS.clear()


def _call(text: str, pos: int) -> tuple[tuple[Arg, ...], int, int]:
    """The call whose `(` is at `pos`: its arguments, its end column and the position after its `)`."""
    empty = _EMPTY_CALL.match(text, pos)
    if empty is not None:
        return (), empty.end() + 1, empty.end()
    args = []
    pos += 1
    while True:
        extent = _ARG_TEXT.match(text, pos)
        if extent is None:
            arg, separator, pos = _read_arg(text, pos)
        else:
            key = (extent.group(), pos)
            known = _ARGS.get(key)
            if known is None:
                if len(_ARGS) >= _MAX_ARGS:
                    _ARGS.clear()
                known = _ARGS[key] = _read_arg(text, pos)
            arg, separator, pos = known
        args.append(arg)
        if separator == ")":
            return tuple(args), pos + 1, pos


def _read_arg(text: str, pos: int) -> tuple[Arg, str, int]:
    """The argument at `pos`, the `,` or `)` after it and the position after that."""
    m = _SIMPLE_ARG.match(text, pos)
    if m is not None:
        return _simple_arg(m), m.group(7), m.end()
    m = _TUPLE_ARG.match(text, pos)
    if m is not None:
        return _tuple_arg(text, m), m.group(3), m.end()
    return _any_arg(text, pos)


def _simple_arg(m: re.Match) -> Arg:
    """The argument `_SIMPLE_ARG` matched (groups: name, sign, atom, operator, sign, atom, `,` or `)`)."""
    value = _atom(m, 2)
    if m.group(4) is not None:
        rhs = _atom(m, 5)
        value = BinOp(m.group(4), value, rhs, _new(ColSpan, (value.span.col, rhs.span.end_col)))
    if m.group(1) is None:
        return Arg(None, value, value.span)
    name_start, name_end = m.span(1)
    return Arg(m.group(1), value, _new(ColSpan, (name_start + 1, value.span.end_col)),
               _new(ColSpan, (name_start + 1, name_end + 1)))


def _tuple_arg(text: str, m: re.Match) -> Arg:
    """The argument `_TUPLE_ARG` matched (groups: name, the tuple, `,` or `)`)."""
    start, end = m.span(2)
    items = tuple(_atom(item, 1) for item in _TUPLE_ITEM.finditer(text, start + 1, end - 1))
    value = TupleValue(items, _new(ColSpan, (start + 1, end + 1)))
    if m.group(1) is None:
        return Arg(None, value, value.span)
    name_start, name_end = m.span(1)
    return Arg(m.group(1), value, _new(ColSpan, (name_start + 1, end + 1)), _new(ColSpan, (name_start + 1, name_end + 1)))


def _atom(m: re.Match, sign: int) -> Union[Num, Sym, Neg]:
    """The atom whose optional `-` is group `sign` and whose integer or name is the group after."""
    text = m.group(sign + 1)
    start, end = m.span(sign + 1)
    cols = _new(ColSpan, (start + 1, end + 1))
    atom = Num(int(text), cols) if text.isdigit() else Sym(text, cols)
    if m.group(sign) is None:
        return atom
    return Neg(atom, _new(ColSpan, (m.start(sign) + 1, end + 1)))


def _any_arg(text: str, pos: int) -> tuple[Arg, str, int]:
    """The argument at `pos`, read from its tokens: the argument, the `,` or `)` after it, the position after that."""
    tokens = _arg_tokens(text, pos)
    arg, i = _arg(tokens, 0)
    if i != len(tokens) - 1 or tokens[i][0] not in (",", ")"):
        raise _Decline
    return arg, tokens[i][0], tokens[i][3] - 1


def _arg_tokens(text: str, pos: int) -> list:
    """The tokens from `pos` to the first `,` or `)` outside parentheses, included.

    Tokens are (kind, text, column, end column); kinds are "num", "name", the punctuation itself,
    and "end": the last token when no `,` or `)` ends the argument.
    """
    tokens = []
    depth = 0
    while (m := _TOKEN.match(text, pos)) is not None:
        number, name, punct = m.groups()
        kind = "num" if number is not None else "name" if name is not None else punct
        tokens.append((kind, m.group(m.lastindex), m.start(m.lastindex) + 1, m.end() + 1))
        pos = m.end()
        if kind == "(":
            depth += 1
        elif kind == ")" or kind == ",":
            if depth == 0:
                return tokens
            if kind == ")":
                depth -= 1
    tokens.append(("end", "", pos + 1, pos + 1))
    return tokens


# Each reader below takes the tokens and an index, and returns what the grammar's transformer
# builds and the index after it.

def _arg(t: list, i: int) -> tuple[Arg, int]:
    if t[i][0] == "name" and t[i + 1][0] == "=":
        name = t[i]
        value, j = _tuple_or_expr(t, i + 2)
        return Arg(name[1], value_of(value), ColSpan(name[2], end_of(value)), ColSpan(name[2], name[3])), j
    value, j = _tuple_or_expr(t, i)
    return Arg(None, value_of(value), ColSpan(start_of(value), end_of(value))), j


def _tuple_or_expr(t: list, i: int):
    """`tuple` (`"(" expr ("," expr)+ ")"`) where one stands, else `expr`."""
    if t[i][0] == "(":
        first, j = _sum(t, i + 1)
        if t[j][0] == ",":
            items = [value_of(first)]
            while t[j][0] == ",":
                item, j = _sum(t, j + 1)
                items.append(value_of(item))
            if t[j][0] != ")":
                raise _Decline
            return TupleValue(tuple(items), ColSpan(t[i][2], t[j][3])), j + 1
    return _sum(t, i)


def _sum(t: list, i: int):
    lhs, i = _product(t, i)
    while t[i][0] == "+" or t[i][0] == "-":
        op = t[i][0]
        rhs, i = _product(t, i + 1)
        lhs = BinOp(op, value_of(lhs), value_of(rhs), ColSpan(start_of(lhs), end_of(rhs)))
    return lhs, i


def _product(t: list, i: int):
    lhs, i = _unary(t, i)
    while t[i][0] in ("*", "/", "//"):
        op = t[i][0]
        rhs, i = _unary(t, i + 1)
        lhs = BinOp(op, value_of(lhs), value_of(rhs), ColSpan(start_of(lhs), end_of(rhs)))
    return lhs, i


def _unary(t: list, i: int):
    kind, text, col, end = t[i]
    if kind == "num":
        return Num(int(text) if text.isdigit() else float(text), ColSpan(col, end)), i + 1
    if kind == "name":
        return Sym(text, ColSpan(col, end)), i + 1
    if kind == "-":
        operand, j = _unary(t, i + 1)
        return Neg(value_of(operand), ColSpan(col, end_of(operand))), j
    if kind == "(":
        inner, j = _sum(t, i + 1)
        if t[j][0] != ")":
            raise _Decline
        return Paren(value_of(inner), col, t[j][3]), j + 1
    raise _Decline
