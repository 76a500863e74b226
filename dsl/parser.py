"""The front end: text -> IR plus NAD1xx diagnostics.

The Lark grammar in `grammar/nad.lark` defines the language. Every construct
lives on one line, and spans inside a line are columns, so a parsed line is
position-independent: the front end interns each distinct line's result and
shares it between files. A line not interned yet is read by the fast path
(nader.dsl.fast_lines: compiled regular expressions for the regular line
forms, building what the grammar's parser builds) or, when it is not one of
those forms, by the grammar's LALR parser (nader.dsl.lark_parser, imported
only then), each line alone: nearly all of them are broken lines, whose
diagnostics come from Lark's errors. The line-level checks (names,
parameters, headers) are in nader.dsl.line_checks, the codes in
nader.dsl.parse_codes; the block structure (header, then node and edge
lines) and the input limits' checks at the door (nader.dsl.limits) are here.
Nothing is `eval`ed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple, Optional, Union

from .diagnostics import Code, Diagnostic, DiagnosticSink, Fix, Severity
from .expr import BinOp, Neg, TupleValue
from .fast_lines import ChainLine, EdgeLine, RawHeader, RawLine, RawNode, read_line
from .fast_lines import forget as forget_args
from .ir import Block, Edge, Node, Program, node_id
from .limits import (DEFAULT_LIMITS, MOST_DIGITS, InputLimits, inputs_problem, line_problem, long_digits,
                     nodes_problem, text_problem, text_size)
from .line_checks import HeaderLine, NodeLine, check_header, check_node, header_name
from .ops import lookup
from .parse_codes import (ADVICE, BEFORE_HEADER, BLANK, EMPTY_FILE, FIX_KINDS, INVALID_SYNTAX, MALFORMED_HEADER,
                          MARKDOWN_FENCE, MISSING_HEADER, fix_message, SYNTAX_CODES, Problem)
from .span import ColSpan, Span


# `tuple.__new__(Span, ...)` builds a NamedTuple such as Span without its Python-level __new__ (hot path).
_new_tuple = tuple.__new__

# -- line syntax (position-independent, interned) ------------------------------

class ParsedLine(NamedTuple):
    item: Union[HeaderLine, NodeLine, EdgeLine, ChainLine, None]
    comment: Optional[str] = None
    problems: tuple[Problem, ...] = ()

    @property
    def fatal(self) -> bool:
        return any(p.code.severity is Severity.ERROR for p in self.problems)


_MAX_DEPTH = 100


def _too_deep(item) -> bool:
    """Whether an argument expression nests deeper than `_MAX_DEPTH` (walked without recursion)."""
    stack = [(a.value, 1) for a in item.args] if type(item) is RawNode else []
    while stack:
        value, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return True
        if type(value) is BinOp:
            stack += ((value.lhs, depth + 1), (value.rhs, depth + 1))
        elif type(value) is Neg:
            stack.append((value.operand, depth + 1))
        elif type(value) is TupleValue:
            stack.extend((item, depth + 1) for item in value.items)
    return False


# Interned lines: equal line texts share one result, so the passes can cache by identity.
_LINES: dict[str, "ParsedLine"] = {}
_MAX_LINES = 1 << 16


def parse_line(text: str) -> ParsedLine:
    """Parse one line (no newline). Interned: equal texts share one result.

    Only lines within the default limits are interned (see `_within_defaults`); the caller checks the
    limits it has before (`nader.dsl.limits.line_problem`). Numbers longer than Python always converts
    are reported (NAD120) whatever the caller checked.
    """
    parsed = _LINES.get(text)
    if parsed is None:
        parsed = _parse_one(text)
        if _within_defaults(text):
            _intern(text, parsed)
    return parsed


def _intern(text: str, parsed: ParsedLine) -> None:
    if len(_LINES) >= _MAX_LINES:
        _clear_caches()
    _LINES[text] = parsed


def _within_defaults(text: str) -> bool:
    """Whether the default limits pass the line. Interned lines all do, so `parse` checks a line only
    when it meets it for the first time, unless its limits are stricter than the defaults."""
    return len(text) <= DEFAULT_LIMITS.digits_per_number or line_problem(text, DEFAULT_LIMITS) is None


def _clear_caches() -> None:
    global _spans_held
    _LINES.clear()
    _UNPACKED.clear()
    _SPANS.clear()
    _spans_held = 0
    _BUT_FOR_ID.clear()
    forget_args()


parse_line.cache_clear = _clear_caches  # type: ignore[attr-defined]


def grammar_parser():
    """The Lark parser of the whole language (`start="program"` for whole files).

    It builds the raw line pieces as it parses (an inline transformer), not a parse tree.
    """
    from .lark_parser import lark_grammar_parser

    return lark_grammar_parser()


def _parse_one(text: str) -> ParsedLine:
    if len(text) > MOST_DIGITS and long_digits(MOST_DIGITS).search(text):
        return ParsedLine(None, None, (line_problem(text, replace(DEFAULT_LIMITS, digits_per_number=MOST_DIGITS,
                                                                  line_length=len(text))),))
    parsed = _read_regular(text)
    if parsed is None:
        from .lark_parser import read_alone

        parsed = _finish(text, read_alone(text))
    return parsed


# Node lines that differ only in their id (`2:Conv2d(...)`, `5:Conv2d(...)`) read the same but
# for it when the ids are equally wide: every column is the same, and no check of a node line
# depends on its id. Keyed by the text around the id and its width.
_NODE_ID = re.compile(r"[ \t\f]*([A-Za-z0-9_]+)[ \t\f]*:")
_BUT_FOR_ID: dict[tuple[str, int, str], ParsedLine] = {}


def _read_regular(text: str) -> Optional[ParsedLine]:
    """A line read by the fast path, with its checks; None when it is not one of the fast forms."""
    head = _NODE_ID.match(text)
    if head is not None:
        start, end = head.span(1)
        key = (text[:start], end - start, text[end:])
        like = _BUT_FOR_ID.get(key)
        if like is not None:
            item, comment, problems = like
            _, op_name, args, params, cols, id_cols, op_cols = item
            item = _new_tuple(NodeLine, (node_id(text[start:end]), op_name, args, params, cols, id_cols, op_cols))
            return _new_tuple(ParsedLine, (item, comment, problems))
    raw = read_line(text)
    if raw is None:
        return None
    parsed = _finish(text, raw)
    if head is not None and type(parsed.item) is NodeLine:
        _BUT_FOR_ID[key] = parsed
    return parsed


def _finish(text: str, raw: Union[RawLine, Problem]) -> ParsedLine:
    """A read line's IR with its line-level checks (names, parameters, headers)."""
    if type(raw) is Problem:
        return ParsedLine(None, None, (raw,))
    item, comment = raw
    problems: list[Problem] = []
    if type(item) is RawNode:
        # Expressions hundreds of levels deep (`-----...1`) would overflow the recursive
        # passes downstream (str, evaluate): report them instead.
        if len(text) > _MAX_DEPTH - 10 and sum(map(text.count, "(-+*/")) > _MAX_DEPTH - 10 and _too_deep(item):
            return ParsedLine(None, None, (Problem(INVALID_SYNTAX, ColSpan(1, len(text) + 1),
                                                   f"expression nested more than {_MAX_DEPTH} levels deep",
                                                   "simplify the expression"),))
        item = check_node(item, problems)
    elif type(item) is RawHeader:
        item = check_header(item, problems)
    return _new_tuple(ParsedLine, (item, comment, tuple(problems)))


# -- files -----------------------------------------------------------------------

@dataclass
class ParseResult:
    """What `parse` returns: the program, the diagnostics of the parse and the source text."""

    program: Program
    diagnostics: list[Diagnostic]
    source: str = ""
    #: The input limits the text was read under: what a repair of it keeps to (no second lookup).
    limits: InputLimits = field(default=DEFAULT_LIMITS, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def syntax_ok(self) -> bool:
        """No line failed to parse (unknown names may remain)."""
        return not any(d.code in SYNTAX_CODES for d in self.diagnostics)


@dataclass
class _OpenBlock:
    """A block whose lines are being read; `close` makes it a `Block`."""

    name: str
    line: int
    header_cols: ColSpan
    leading: tuple[str, ...]
    header_comment: Optional[str]
    nodes: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    implicit: bool = False  # no header: named after the file

    def close(self, trailing: list[str], last: Optional[Span]) -> Block:
        """The block, `last` being the span of its last node or edge line (None when it has none)."""
        end_line, end_col = (last.line, last.end_col) if last else (self.line, self.header_cols.end_col)
        return Block(self.name, tuple(self.nodes), tuple(self.edges), self.leading, self.header_comment,
                     tuple(trailing), Span(self.line, 1, end_line, end_col),
                     Span.on_line(self.line, self.header_cols))


def _has_header(lines, start):
    """Whether any line from `start` on is a header (lines as `parse` splits them)."""
    for line in lines[start:]:
        if line.strip(BLANK) and type(parse_line(line).item) is HeaderLine:
            return True
    return False


def _fix_fits(code: Code, current: Optional[_OpenBlock], lines, lineno: int) -> bool:
    """Whether the fix of a line that did not parse would leave the file free of new syntax errors.

    A line mended into a header after the lines of a headerless block would put those lines
    before the first header (NAD110), and so would a line mended into a node or edge above
    the first header.
    """
    if code is MALFORMED_HEADER:
        return current is None or not current.implicit
    if code is MARKDOWN_FENCE or current is not None:
        return True  # an emptied line, or a line mended inside a block
    return not _has_header(lines, lineno)


# The spans of node and edge lines, by columns and then line number: files repeat both, and a Span
# is immutable, so Nodes and Edges can share one (building it costs more than finding it).
_SPANS: dict[ColSpan, dict[int, Span]] = {}
_MAX_SPANS = 1 << 16
_spans_held = 0


def _line_span(lineno: int, cols: ColSpan, by_line: dict[int, Span]) -> Span:
    """The span of `cols` on line `lineno`, added to `by_line` (`_SPANS[cols]`); at `_MAX_SPANS` spans
    held, every row of `_SPANS` is emptied first (in place: `_UNPACKED` holds them)."""
    global _spans_held
    if _spans_held >= _MAX_SPANS:
        for row in _SPANS.values():
            row.clear()
        _spans_held = 0
    span = by_line[lineno] = _new_tuple(Span, (lineno, cols[0], lineno, cols[1]))
    _spans_held += 1
    return span


# What `parse` reads of each interned line, as plain tuples (unpacking a NamedTuple such as ParsedLine
# goes through an iterator): filled from `_LINES`, so it holds no line that `_LINES` does not.
_UNPACKED: dict[str, tuple] = {}


def _unpacked(parsed: ParsedLine) -> tuple:
    """(item, comment, problems, type of item, the item's fields, the `_SPANS` row of its columns);
    a node line's fields end with the OpDef that `Node` resolves its operation to, an edge line's (and
    a chain's) with its number of sources."""
    item, comment, problems = parsed
    kind = type(item)
    if kind is NodeLine:
        return item, comment, problems, kind, (*item, lookup(item.op_name)), _SPANS.setdefault(item.cols, {})
    if kind is EdgeLine:
        return item, comment, problems, kind, (*item, len(item.sources)), _SPANS.setdefault(item.cols, {})
    if kind is ChainLine:
        return item, comment, problems, kind, (*item, sum(len(e.sources) for e in item.edges)), \
            _SPANS.setdefault(item.cols, {})
    return item, comment, problems, kind, (), None


def parse(text: str, path: str = "<string>", limits: InputLimits = DEFAULT_LIMITS) -> ParseResult:
    """Parse a whole file. Never raises on bad input: problems become diagnostics.

    Comment lines attach to the item (header, node or edge) that follows them;
    comments at the end of a block are its trailing comments. The input limits
    (nader.dsl.limits) are checked before the work they bound: a text or a block
    past them gives no blocks at all, a line past them is not read.
    """
    sink = DiagnosticSink(path)
    emit = sink.emit
    if len(text) * 4 > limits.text_bytes:  # a character is at most 4 bytes
        too_large = text_problem(text_size(text), limits)
        if too_large is not None:
            return _rejected(sink, too_large, 1, text, limits)
    blocks: list[Block] = []
    pending: list[str] = []
    current: Optional[_OpenBlock] = None
    last: Optional[Span] = None  # the span of the open block's last node or edge line
    has_header: Optional[bool] = None  # known once a node or edge comes before any header
    reported_before_header = False
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if len(text) > limits.line_length or limits.lowered():
        lines = _screened(lines, limits, emit)
    unpacked = _UNPACKED.get
    new_node = Node._parsed  # an Edge has no __post_init__: its constructor is as quick
    # The line limits, checked on lines not met before: a line no longer than `short` cannot break them.
    short, longest, long_run = limits.digits_per_number, limits.line_length, long_digits(limits.digits_per_number).search
    nodes_left = inputs_left = 0  # in the open block, before a limit is reached
    for lineno, line in enumerate(lines, 1):
        read = unpacked(line)
        if read is None:
            parsed = _LINES.get(line)
            if parsed is None:
                # Blank means what the grammar ignores (space, tab, form feed, CR), not every Unicode space.
                if not line.strip(BLANK):
                    continue
                if len(line) > short and (len(line) > longest or long_run(line)):
                    problem = line_problem(line, limits)
                    if problem is not None:
                        emit(problem.code, problem.message, Span.on_line(lineno, problem.cols), problem.help,
                             block=current.name if current else None)
                        continue
                parsed = _parse_one(line)
                read = _unpacked(parsed)
                # Interned only within the default limits (see `parse_line`); the check just made says so.
                if limits is DEFAULT_LIMITS or _within_defaults(line):
                    _intern(line, parsed)
                    _UNPACKED[line] = read
            else:
                read = _UNPACKED[line] = _unpacked(parsed)
        item, comment, problems, kind, fields, spans = read
        if problems:
            block_name = item.name if kind is HeaderLine else current.name if current else None
            for p in problems:
                help_text, fix = p.help, None
                if p.fix is not None:
                    if item is None and not _fix_fits(p.code, current, lines, lineno):
                        help_text = ADVICE[p.code]
                    else:
                        cols, new = p.fix
                        fix = Fix.replace(Span.on_line(lineno, cols), new, kind=FIX_KINDS.get(p.code.code, "edit"),
                                          message=fix_message(p.code, line[cols.col - 1:cols.end_col - 1], new))
                emit(p.code, p.message, _new_tuple(Span, (lineno, p.cols[0], lineno, p.cols[1])), help_text,
                     block=block_name, fix=fix)
        if item is None:
            if comment is not None and not problems:
                pending.append(comment)
            continue
        if kind is HeaderLine:
            if current is not None:
                if inputs_left < 0 and _too_many_inputs(current, limits, emit):
                    return _rejected(sink, None, 0, text, limits)
                blocks.append(current.close([], last))
            current = _OpenBlock(item.name, lineno, item.cols, tuple(pending), comment)
            add_node, add_edge, last = current.nodes.append, current.edges.append, None
            nodes_left, inputs_left = limits.nodes_per_block, limits.inputs_per_node
            pending = []
            continue
        if kind is NodeLine:
            node_id, op_name, args, params, cols, id_cols, op_cols, opdef = fields
            nodes_left -= 1
        elif kind is EdgeLine:
            sources, target, cols, source_cols, target_cols, inputs = fields
            inputs_left -= inputs
        else:  # a chain `a->b->c`: its edges, one after the other
            chain, cols, inputs = fields
            inputs_left -= inputs
        if current is None:
            if has_header is None:
                has_header = _has_header(lines, lineno)
            if has_header:
                if not reported_before_header:
                    emit(BEFORE_HEADER, "node or edge line before the first header",
                         Span.on_line(lineno, cols), "move it under a `##Name##` header")
                    reported_before_header = True
                continue
            implicit_name = Path(path).stem if path not in ("<string>", "-", "<stdin>") else "block"
            # This line's problems came before its block opened: they are the block's, or the verifier
            # runs shape inference past them (an unknown symbol on line 1: internal error, fuzz_bench).
            items = sink.items
            k = len(items)
            while k and items[k - 1].block is None and items[k - 1].span.line == lineno:
                k -= 1
            items[k:] = [d.located(block=implicit_name) for d in items[k:]]
            header = f"##{header_name(implicit_name)}##"
            emit(MISSING_HEADER, f"no `##Name##` header; the lines form one block named `{implicit_name}`",
                 Span.on_line(lineno, cols), f"add `{header}` as the first line",
                 fix=Fix.replace(Span(1, 1, 1, 1), header + "\n", kind=FIX_KINDS[MISSING_HEADER.code],
                                 message=f"insert the header `{header}`"))
            current = _OpenBlock(implicit_name, lineno, ColSpan(1, 1), (), None, implicit=True)
            add_node, add_edge = current.nodes.append, current.edges.append
            nodes_left = limits.nodes_per_block - (kind is NodeLine)
            inputs_left = limits.inputs_per_node - (inputs if kind is not NodeLine else 0)
        if nodes_left < 0:
            return _rejected(sink, nodes_problem(current.name, cols, limits), lineno, text, limits)
        try:
            last = spans[lineno]
        except KeyError:
            last = _line_span(lineno, cols, spans)
        leading = ()
        if pending:
            leading = tuple(pending)
            pending = []
        if kind is NodeLine:
            add_node(new_node(node_id, op_name, args, comment, leading, last, id_cols, op_cols, params, opdef))
        elif kind is EdgeLine:
            add_edge(Edge(sources, target, comment, leading, last, source_cols, target_cols))
        else:  # the line's comments go with its first edge
            for k, e in enumerate(chain):
                add_edge(Edge(e.sources, e.target, None if k else comment, () if k else leading,
                              Span.on_line(lineno, e.cols), e.source_cols, e.target_cols))
    if current is not None:
        if inputs_left < 0 and _too_many_inputs(current, limits, emit):
            return _rejected(sink, None, 0, text, limits)
        blocks.append(current.close(pending, last))
    elif not sink.items:
        emit(EMPTY_FILE, "the file holds no block", Span(1, 1, 1, 1), "write a header, nodes and edges")
    return ParseResult(Program(tuple(blocks), path), sink.items, text, limits)


def read_in_block(line: str) -> Optional[tuple[tuple[Node, ...], tuple[Edge, ...]]]:
    """(nodes, edges) of `line` as `parse` reads `##B##\\n{line}\\n` under the default limits (its line 2),
    for a node or edge line that reads without a problem; None for any other line, whose text the caller
    parses. The lines a repair's candidate writes are nearly all such lines, read without a file around them."""
    read = _UNPACKED.get(line)
    if read is None:
        parsed = _LINES.get(line)
        if parsed is not None:
            read = _UNPACKED[line] = _unpacked(parsed)
        elif not line.strip(BLANK) or not _within_defaults(line):
            return None
        else:  # as `parse` reads a line it meets for the first time
            parsed = _parse_one(line)
            read = _unpacked(parsed)
            _intern(line, parsed)
            _UNPACKED[line] = read
    item, comment, problems, kind, fields, spans = read
    if problems or (kind is not NodeLine and kind is not EdgeLine):
        return None
    if kind is NodeLine:
        node_id, op_name, args, params, cols, id_cols, op_cols, opdef = fields
        span = spans.get(2) or _line_span(2, cols, spans)
        return (Node._parsed(node_id, op_name, args, comment, (), span, id_cols, op_cols, params, opdef),), ()
    sources, target, cols, source_cols, target_cols, inputs = fields
    if inputs > DEFAULT_LIMITS.inputs_per_node:
        return None  # the block past its limit: parse says what it makes of that
    span = spans.get(2) or _line_span(2, cols, spans)
    return (), (Edge(sources, target, comment, (), span, source_cols, target_cols),)


def _screened(lines: list[str], limits: InputLimits, emit) -> list[str]:
    """The lines with those past a line limit emptied, each reported: for a text with lines longer
    than the limit may be, or limits stricter than the defaults that the interned lines were checked against."""
    if not limits.lowered() and max(map(len, lines)) <= limits.line_length:
        return lines
    screened = lines
    for lineno, line in enumerate(lines, 1):
        problem = line_problem(line, limits) if len(line) > limits.digits_per_number else None
        if problem is not None:
            if screened is lines:
                screened = list(lines)
            screened[lineno - 1] = ""
            emit(problem.code, problem.message, Span.on_line(lineno, problem.cols), problem.help)
    return screened


def _too_many_inputs(block: _OpenBlock, limits: InputLimits, emit) -> bool:
    """Whether a node of the block has more inputs than the limit (reported at the edge that takes it past);
    counted only for blocks whose edges have more sources in all than one node may have."""
    counts: dict = {}
    for edge in block.edges:
        count = counts[edge.target] = counts.get(edge.target, 0) + len(edge.sources)
        if count > limits.inputs_per_node:
            problem = inputs_problem(edge.target, ColSpan(edge.span.col, edge.span.end_col), limits)
            emit(problem.code, problem.message, edge.span, problem.help)  # of the file: no block is left
            return True
    return False


def _rejected(sink: DiagnosticSink, problem: Optional[Problem], lineno: int, text: str,
              limits: InputLimits) -> ParseResult:
    """The result of a text past a limit: no blocks, the diagnostics so far and `problem` on line `lineno`
    (a problem of the file: no block is left to hold it)."""
    if problem is not None:
        sink.emit(problem.code, problem.message, Span.on_line(lineno, problem.cols), problem.help)
    return ParseResult(Program((), sink.file), sink.items, text, limits)
