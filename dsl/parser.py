"""The front end: text -> IR plus NAD1xx diagnostics.

The Lark grammar in `grammar/nad.lark` defines the language. Every construct
lives on one line, and spans inside a line are columns, so a parsed line is
position-independent: the front end interns each distinct line's result and
shares it between files. The lines of a file that are not interned yet are
parsed together in one LALR pass whose inline transformer builds the IR
pieces directly (no parse tree); after a broken line the pass resumes with
the next one, and the broken line is parsed alone for its diagnostic. Block
structure (header, then node and edge lines) is assembled here. Nothing is
`eval`ed.
"""
from __future__ import annotations

import difflib
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple, Optional, Union

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .diagnostics import Code, Diagnostic, DiagnosticSink, Fix, FixAvailability, Severity, define_code
from .expr import SIZE_SYMBOLS, BinOp, Neg, Num, Sym, TupleValue, Value, symbols
from .ir import Arg, Block, Edge, Node, NodeId, Program, default_value, node_id
from .ops import OpDef, all_names, lookup
from .span import ColSpan, Span

E, W = Severity.ERROR, Severity.WARNING
SOMETIMES, ALWAYS = FixAvailability.SOMETIMES, FixAvailability.ALWAYS

UNREADABLE_FILE = define_code("NAD100", "unreadable-file", E, "The file cannot be read as UTF-8 text.", """
    ## What it does
    Reports a block file that does not exist, cannot be opened, or is not UTF-8 text.
    ## Fix
    Check the path; save the file as UTF-8.
""")
INVALID_SYNTAX = define_code("NAD101", "invalid-syntax", E, "A line is not a header, node, edge or comment.", """
    ## What it does
    Reports a line the grammar does not accept and names what was expected there.
    ## Why is this bad?
    Every line must be a header `##Name##`, a node `ID:OP(args)`, an edge `a->b`, a comment or blank.
    ## Example
    ```
    2:Conv2d(out_channels=C,,kernel_size=3)
    ```
    ## Fix
    Write one of the four line forms; the message says which token was unexpected. An unmatched `)`
    whose removal makes the line parse comes with that fix.
""", SOMETIMES)
INVALID_ARROW = define_code("NAD102", "invalid-edge-arrow", E, "An edge line lacks the `->` arrow.", """
    ## What it does
    Reports edge lines written with something other than `->` between the ids (`0-2`, `0>2`, `0 2`, `0=>2`).
    ## Example
    ```
    0-2
    ```
    ## Fix
    Write `0->2`; several sources are written `0,1->2`. The diagnostic carries the fix when the
    arrow can only mean `->` (not for `<-`).
""", SOMETIMES)
UNCLOSED_PAREN = define_code("NAD103", "unclosed-parenthesis", E, "A `(` is never closed.", """
    ## What it does
    Reports an opening parenthesis without its `)` on the same line.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=3
    ```
    ## Fix
    Close the argument list on the same line: every construct of the language fits on one line.
    When one `)` at the end of the line makes it parse, the diagnostic carries that fix.
""", SOMETIMES)
UNKNOWN_OPERATION = define_code("NAD104", "unknown-operation", E, "The operation is not in the registry.", """
    ## What it does
    Reports a node whose operation name is not one of the language's operations. Names are case-sensitive.
    ## Example
    ```
    2:Conv2D(out_channels=C,kernel_size=3)
    ```
    ## Fix
    Use a registered name (`nadc explain ops` lists them); the help line suggests the closest one,
    and the diagnostic carries the fix that writes it.
""", SOMETIMES)
UNKNOWN_PARAMETER = define_code("NAD105", "unknown-parameter", E, "The operation has no parameter of that name.", """
    ## What it does
    Reports a keyword argument that the operation does not declare.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=3,group=4)
    ```
    ## Fix
    Use a declared parameter name (here `groups`), or remove the argument.
""", SOMETIMES)
DUPLICATE_PARAMETER = define_code("NAD106", "duplicate-parameter", E, "A parameter is given twice.", """
    ## What it does
    Reports a node that sets the same parameter twice, by keyword or by position and keyword.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=3,kernel_size=1)
    ```
    ## Fix
    Keep one of the two.
""")
MISPLACED_POSITIONAL = define_code("NAD107", "misplaced-positional-argument", E, "Positional argument after a keyword, or too many.", """
    ## What it does
    Reports positional arguments after keyword ones, and more positional arguments than the operation has parameters.
    ## Example
    ```
    2:concat(dim=1,2)
    ```
    ## Fix
    Put positional arguments first, or name them.
""")
MARKDOWN_FENCE = define_code("NAD108", "markdown-fence", E, "A markdown code fence inside a block file.", """
    ## What it does
    Reports lines like ```` ``` ```` that LLM replies wrap blocks in.
    ## Why is this bad?
    The compiler is strict: it does not guess which lines of a reply are the block.
    ## Fix
    Delete the fence lines (the fix empties a line that holds only a fence), or extract the blocks
    from the reply with `nader.dsl.extract_blocks`.
""", SOMETIMES)
UNKNOWN_SYMBOL = define_code("NAD109", "unknown-symbol", E, "An expression uses a name that is not a size symbol.", """
    ## What it does
    Reports names in expressions other than `B` (batch), `C` (block input channels), `dim` (block output
    channels), `H` and `W` (spatial size).
    ## Example
    ```
    2:Conv2d(out_channels=c*2,kernel_size=3)
    ```
    ## Fix
    Use one of the size symbols (they are case-sensitive) or a number.
""", SOMETIMES)
BEFORE_HEADER = define_code("NAD110", "line-before-header", E, "A node or edge line before the file's first header.", """
    ## What it does
    Reports node and edge lines that come before the first `##Name##` header in a file that has headers.
    ## Fix
    Move the lines under a header, or add a header above them.
""")
MISSING_HEADER = define_code("NAD111", "missing-header", W, "The file has no `##Name##` header.", """
    ## What it does
    Warns that a file holds nodes and edges but no header; its lines form one block named after the file.
    ## Fix
    Add a header such as `##MyBlock##` as the first line.
""", ALWAYS)
MALFORMED_HEADER = define_code("NAD112", "malformed-header", E, "A header is not `##Name##`.", """
    ## What it does
    Reports lines that start with `##` but are not a header: unclosed (`##Name`), empty (`####`) or with
    other characters than letters, digits, `_`, `-`, `.` and single spaces between words in the name
    (NADER's own logs hold headers such as `##built-in function input_stem##`, so spaces are accepted).
    ## Fix
    Write `##Name##`, the name made of letters, digits, `_`, `-` or `.`; comments start with a single `#`.
""", SOMETIMES)
INVALID_ID = define_code("NAD113", "invalid-node-id", E, "A node id has characters other than letters, digits and `_`.", """
    ## What it does
    Reports node lines whose id is neither an integer nor a name of letters, digits and `_`
    (`conv-1:ReLU`, `2.a:BN`).
    ## Example
    ```
    conv-1:ReLU
    ```
    ## Fix
    Write the id with letters, digits and `_` only: `conv_1:ReLU` (`nadc fmt --renumber` numbers a block's nodes).
""", SOMETIMES)
MISSING_COLON = define_code("NAD114", "missing-colon", E, "A node line lacks the `:` after its id.", """
    ## What it does
    Reports node lines written `2 Conv2d(...)` or `2Conv2d(...)`.
    ## Fix
    Write `2:Conv2d(...)`.
""", SOMETIMES)
OPERATION_ALIAS = define_code("NAD115", "operation-alias", W, "An operation is spelled by an alias.", """
    ## What it does
    Warns about accepted but non-canonical spellings of operations found in NADER's files, such as `Concat`.
    ## Fix
    Use the canonical name (`concat`); `nadc fmt` rewrites it.
""", ALWAYS)
EXTRA_HASHES = define_code("NAD116", "header-extra-hashes", W, "A header uses more than two hashes.", """
    ## What it does
    Warns about headers such as `###Name###`, which LLMs often write.
    ## Fix
    Write `##Name##`; `nadc fmt` rewrites it.
""", ALWAYS)
EMPTY_FILE = define_code("NAD117", "no-blocks", E, "The file holds no block.", """
    ## What it does
    Reports a file with no header, node or edge line.
    ## Fix
    Write at least one block: a header, its nodes and its edges.
""")

_BLANK = " \t\f\r"
_HEADER_NAME = re.compile(r"[A-Za-z0-9_.\-]+(?: [A-Za-z0-9_.\-]+)*")
_ID = r"[A-Za-z0-9_]+"
# `a-b`, `a=>b`, `a→b`, `0 2`: ids around something that is not `->`.
_EDGE_LIKE = re.compile(rf"^\s*(?P<sources>{_ID}(?:\s*,\s*{_ID})*)(?P<arrow>\s*[-=>~<\u2192\u2013\u2014]+\s*|\s+)"
                        rf"(?P<target>{_ID})\s*(?:#.*)?$", re.ASCII)
_BAD_ID = re.compile(r"^\s*(?P<id>[^\s:#(),=]+)\s*:", re.ASCII)
_SPACED_OP = re.compile(rf"^\s*(?P<id>{_ID})(?P<gap>\s+)(?P<op>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<paren>\(?)", re.ASCII)
_GLUED_OP = re.compile(r"^\s*(?P<id>\d+)(?P<op>[A-Za-z_][A-Za-z0-9_]*)", re.ASCII)
_FENCE_LINE = re.compile(r"^\s*(?:`{3,}|~{3,})[^`~]*$")
_TERMINAL_TEXT = {
    "INT": "an integer", "ID": "a node id", "FLOAT": "a decimal number", "NAME": "a name", "LPAR": "`(`", "RPAR": "`)`",
    "COMMA": "`,`", "COLON": "`:`", "EQUAL": "`=`", "PLUS": "`+`", "MINUS": "`-`", "STAR": "`*`",
    "SLASH": "`/`", "__ANON_0": "`->`", "HEADER": "a header", "COMMENT": "a comment", "$END": "end of line",
}


# -- line syntax (position-independent, interned) ------------------------------

@dataclass(frozen=True)
class Problem:
    """A diagnostic found in one line, before the line number is known.

    `fix`: the columns to replace and their replacement, when the help's
    proposal can be applied mechanically.
    """

    code: Code
    cols: ColSpan
    message: str
    help: Optional[str] = None
    fix: Optional[tuple[ColSpan, str]] = None


@dataclass(frozen=True)
class HeaderLine:
    name: str
    hashes: int
    cols: ColSpan


@dataclass(frozen=True)
class NodeLine:
    id: NodeId
    op_name: str  # canonical when known
    args: tuple[Arg, ...]
    params: dict
    cols: ColSpan
    id_cols: ColSpan
    op_cols: ColSpan


@dataclass(frozen=True)
class EdgeLine:
    sources: tuple[NodeId, ...]
    target: NodeId
    cols: ColSpan
    source_cols: tuple[ColSpan, ...]
    target_cols: ColSpan


@dataclass(frozen=True)
class ParsedLine:
    item: Union[HeaderLine, NodeLine, EdgeLine, None]
    comment: Optional[str] = None
    problems: tuple[Problem, ...] = ()

    @property
    def fatal(self) -> bool:
        return any(p.code.severity is Severity.ERROR for p in self.problems)


def _tok_cols(tok: Token) -> ColSpan:
    return ColSpan(tok.column, tok.end_column)


class _Paren(NamedTuple):
    """A parenthesised expression while its line is built: the value, and where its parentheses are.

    An argument or an operation that starts or ends with `(...)` spans the parentheses; the
    value inside keeps its own span.
    """

    value: Value
    col: int
    end_col: int


def _value(x) -> Value:
    return x.value if type(x) is _Paren else x


def _start(x) -> int:
    return x.col if type(x) is _Paren else x.span.col


def _end(x) -> int:
    return x.end_col if type(x) is _Paren else x.span.end_col


class _LineBuilder(Transformer):
    """Builds the IR pieces of a line while Lark parses it (`Lark(transformer=...)`): no parse tree.

    Positions come from the tokens, so `(`, `)` and unary `-` are named terminals. Each
    finished line is also appended to `_STATE.lines` while `_intern` collects them.
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
        return _Paren(_value(ch[1]), ch[0].column, ch[2].end_column)

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
        return ("node", node_id(ident), str(op), args, ColSpan(ident.column, end),
                ColSpan(ident.column, ident.end_column), ColSpan(op.column, op.end_column))

    def edge(self, ch):
        return EdgeLine(tuple(node_id(t) for t in ch[:-1]), node_id(ch[-1]), ColSpan(ch[0].column, ch[-1].end_column),
                        tuple(ColSpan(t.column, t.end_column) for t in ch[:-1]),
                        ColSpan(ch[-1].column, ch[-1].end_column))

    def line(self, ch):
        lines = getattr(_STATE, "lines", None)
        if lines is not None:
            lines.append(ch)
        return ch

    def lines(self, ch):
        return None  # the lines went to `_STATE.lines`

    def program(self, ch):
        return None


_STATE = threading.local()


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = resources.files("nader.grammar").joinpath("nad.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", start=["line", "program"], transformer=_LineBuilder(),
                maybe_placeholders=True, cache=True)


def grammar_parser() -> Lark:
    """The Lark parser of the whole language (`start="program"` for whole files).

    It builds IR pieces as it parses (an inline transformer), not a parse tree.
    """
    return _lark()


_MAX_DEPTH = 100


def _too_deep(parts) -> bool:
    """Whether an argument expression nests deeper than `_MAX_DEPTH` (walked without recursion)."""
    stack = []
    for part in parts:
        if isinstance(part, tuple) and part[0] == "node":
            stack.extend((a.value, 1) for a in part[3])
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
    """Parse one line (no newline). Interned: equal texts share one result."""
    parsed = _LINES.get(text)
    if parsed is None:
        if len(_LINES) >= _MAX_LINES:
            _LINES.clear()
        parsed = _LINES[text] = _parse_one(text)
    return parsed


parse_line.cache_clear = _LINES.clear  # type: ignore[attr-defined]


def _parse_one(text: str) -> ParsedLine:
    try:
        parts = _lark().parse(text, start="line")
    except UnexpectedInput as error:
        return ParsedLine(None, None, (_classify_error(text, error),))
    return _finish(text, parts)


def _intern(lines: list[str]) -> None:
    """Parses the lines not interned yet, in one LALR pass (resumed after each broken line)."""
    missing = [line for line in dict.fromkeys(lines) if line not in _LINES and line.strip(_BLANK)]
    if not missing:
        return
    if len(_LINES) + len(missing) > _MAX_LINES:
        _LINES.clear()
    parser = _lark()
    start = 0
    while start < len(missing):
        chunk = missing[start:]
        done = _STATE.lines = []
        try:
            parser.parse("\n".join(chunk), start="program")
        except UnexpectedInput:
            pass
        finally:
            _STATE.lines = None
        for text, parts in zip(chunk, done):
            _LINES[text] = _finish(text, parts)
        start += len(done)
        if start < len(missing):  # the parse stopped at this line: parse it alone for its diagnostic
            _LINES[missing[start]] = _parse_one(missing[start])
            start += 1


def _finish(text: str, parts: list) -> ParsedLine:
    """A parsed line's IR with its line-level checks (names, parameters, headers)."""
    # Expressions hundreds of levels deep (`-----...1`) would overflow the recursive
    # passes downstream (str, evaluate): report them instead.
    if sum(map(text.count, "(-+*/")) > _MAX_DEPTH - 10 and _too_deep(parts):
        return ParsedLine(None, None, (Problem(INVALID_SYNTAX, ColSpan(1, len(text) + 1),
                                               f"expression nested more than {_MAX_DEPTH} levels deep",
                                               "simplify the expression"),))
    comment = None
    item = None
    for part in parts:
        if isinstance(part, Token) and part.type == "COMMENT":
            comment = str(part).rstrip()
        else:
            item = part
    problems: list[Problem] = []
    if isinstance(item, Token):
        item = _header(item, problems)
    elif isinstance(item, tuple):
        item = _node(item, problems)
    return ParsedLine(item, comment, tuple(problems))


def header_name(name: str) -> str:
    """`name` as a header can spell it: other characters become `_` (`block` when nothing is left)."""
    if _HEADER_NAME.fullmatch(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return cleaned or "block"


def _header(tok: Token, problems: list[Problem]) -> Optional[HeaderLine]:
    text = str(tok)
    left = len(text) - len(text.lstrip("#"))
    right = len(text) - len(text.rstrip("#"))
    name = text[left:len(text) - right].strip()
    cols = _tok_cols(tok)
    if not _HEADER_NAME.fullmatch(name):
        if not name:
            problems.append(Problem(MALFORMED_HEADER, cols, "header has no name", "name the block: `##Name##`"))
            return None
        what = f"name `{name}` has characters other than letters, digits, `_`, `-`, `.`, spaces"
        fixed = f"##{header_name(name)}##"
        problems.append(Problem(MALFORMED_HEADER, cols, f"header {what}", f"write `{fixed}`", (cols, fixed)))
        return None
    if left > 2 or right > 2:
        problems.append(Problem(EXTRA_HASHES, cols, f"header `{text}` uses {max(left, right)} hashes",
                                f"write `##{name}##`", (cols, f"##{name}##")))
    return HeaderLine(name, max(left, right), cols)


def _suggest(name: str, choices: list[str]) -> Optional[str]:
    lowered = {c.lower(): c for c in choices}
    if name.lower() in lowered:
        return lowered[name.lower()]
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def _node(raw: tuple, problems: list[Problem]) -> NodeLine:
    _, node_id, op_name, args, cols, id_cols, op_cols = raw
    opdef = lookup(op_name)
    if opdef is None:
        guess = _suggest(op_name, all_names())
        problems.append(Problem(UNKNOWN_OPERATION, op_cols, f"unknown operation `{op_name}`",
                                f"did you mean `{guess}`?" if guess else "see `nadc explain ops` for the operations",
                                (op_cols, guess) if guess else None))
    elif opdef.name != op_name:
        problems.append(Problem(OPERATION_ALIAS, op_cols, f"`{op_name}` is an alias of `{opdef.name}`",
                                f"write `{opdef.name}`", (op_cols, opdef.name)))
        op_name = opdef.name
    for arg in args:
        for sym in symbols(arg.value):
            if sym.name not in SIZE_SYMBOLS:
                guess = _suggest(sym.name, list(SIZE_SYMBOLS))
                problems.append(Problem(UNKNOWN_SYMBOL, sym.span, f"unknown symbol `{sym.name}`",
                                        f"did you mean `{guess}`?" if guess else "sizes use B, C, dim, H and W",
                                        (sym.span, guess) if guess else None))
    params = _bind(opdef, args, problems) if opdef else {}
    return NodeLine(node_id, op_name, args, params, cols, id_cols, op_cols)


def _bind(opdef: OpDef, args: tuple[Arg, ...], problems: list[Problem]) -> dict[str, Value]:
    """Bind arguments to the operation's parameters; fill in defaults."""
    params: dict[str, Value] = {}
    variadic = next((p for p in opdef.params if p.variadic), None)
    positional_slots = [p for p in opdef.params if not p.variadic]
    extra: list[Value] = []
    seen_keyword = False
    index = 0
    for arg in args:
        if arg.name is None:
            if seen_keyword:
                problems.append(Problem(MISPLACED_POSITIONAL, arg.span, "positional argument after a keyword argument",
                                        "put positional arguments first, or name this one"))
                continue
            if variadic is not None:
                extra.append(arg.value)
            elif index < len(positional_slots):
                params[positional_slots[index].name] = arg.value
                index += 1
            else:
                n = len(positional_slots)
                takes = f"takes {n} positional argument{'s' if n != 1 else ''}" if n else "takes no arguments"
                problems.append(Problem(MISPLACED_POSITIONAL, arg.span,
                                        f"`{opdef.name}` {takes}; this one is extra",
                                        f"remove it; the signature is `{opdef.signature()}`"))
            continue
        seen_keyword = True
        param = opdef.param(arg.name)
        if param is None:
            names = [p.name for p in opdef.params]
            guess = _suggest(arg.name, names) if names else None
            if guess is not None and _gives(opdef, args, guess):
                help_text, fix = f"`{guess}` is given already; remove this argument", None
            elif guess is not None:
                help_text, fix = f"did you mean `{guess}`?", (arg.name_span, guess)
            else:
                help_text = f"`{opdef.name}` takes no parameters" if not names else f"the signature is `{opdef.signature()}`"
                fix = None
            problems.append(Problem(UNKNOWN_PARAMETER, arg.name_span,
                                    f"`{opdef.name}` has no parameter `{arg.name}`", help_text, fix))
            continue
        if param.name in params:
            problems.append(Problem(DUPLICATE_PARAMETER, arg.span, f"parameter `{param.name}` is given twice",
                                    "keep one of them"))
            continue
        params[param.name] = arg.value
    if variadic is not None and extra:
        if variadic.name in params:
            problems.append(Problem(DUPLICATE_PARAMETER, args[0].span, f"parameter `{variadic.name}` is given twice",
                                    "give the sizes either positionally or by keyword"))
        else:
            params[variadic.name] = TupleValue(tuple(extra))
    for param in opdef.params:
        if param.name not in params:
            if param.default_from and param.default_from in params:
                params[param.name] = params[param.default_from]
            elif (value := default_value(param.default)) is not None:
                params[param.name] = value
    return params


# Help for a syntax error whose fix is uncertain, or would not fit where the line stands.
_ADVICE = {
    MARKDOWN_FENCE: "delete the fence; block files hold only headers, nodes, edges and comments",
    MALFORMED_HEADER: "write the header as `##Name##`",
    INVALID_SYNTAX: "lines are headers `##Name##`, nodes `ID:OP(args)`, edges `a->b` or `# comments`",
    UNCLOSED_PAREN: "close every `(` on the line that opens it",
    INVALID_ARROW: "write edges from source to target with `->`: `a->b`",
    INVALID_ID: "write ids as integers or names of letters, digits and `_`",
    MISSING_COLON: "write the node as `ID:OP(args)`",
}


def _parses(text: str) -> bool:
    """Whether a line parses with no syntax problem (a candidate fix is checked with this)."""
    try:
        _lark().parse(text, start="line")
    except UnexpectedInput:
        return False
    header = _HEADER_TOKEN.match(text)
    return header is None or _HEADER_NAME.fullmatch(header.group("name").strip()) is not None


_HEADER_TOKEN = re.compile(r"^\s*#{2,}(?P<name>[^#\r\n]*)#{2,}")


def _code_end(text: str) -> int:
    """The column just after a line's code: before its comment and trailing blanks."""
    code = text.split("#", 1)[0] if not text.lstrip().startswith("#") else text
    return len(code.rstrip(_BLANK)) + 1


def _fixed(text: str, cols: ColSpan, replacement: str) -> Optional[tuple[str, tuple[ColSpan, str]]]:
    """The line with `cols` replaced, and the edit, if the result parses."""
    candidate = text[:cols.col - 1] + replacement + text[cols.end_col - 1:]
    return (candidate, (cols, replacement)) if _parses(candidate) else None


def _shown(line: str) -> str:
    """A line as a help text quotes it: without comment and surrounding blanks."""
    return (line if line.lstrip().startswith("#") else line.split("#", 1)[0]).strip(_BLANK)


def _gives(opdef: OpDef, args: tuple[Arg, ...], name: str) -> bool:
    """Whether `args` set parameter `name`, by keyword or by position."""
    if any(a.name == name for a in args):
        return True
    slots = [p.name for p in opdef.params if not p.variadic]
    positional = sum(1 for a in args if a.name is None)
    return name in slots[:positional] or (positional > 0 and any(p.variadic and p.name == name for p in opdef.params))


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
                       _ADVICE[MARKDOWN_FENCE])
    if stripped.startswith("##"):
        name = stripped.strip("#").strip()
        fix = _fixed(text, whole, f"##{name}##") if name else None
        if fix:
            return Problem(MALFORMED_HEADER, whole, "header is not closed with `##`", f"write `##{name}##`", fix[1])
        return Problem(MALFORMED_HEADER, whole, "header is not closed with `##`", _ADVICE[MALFORMED_HEADER])
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
        return Problem(UNCLOSED_PAREN, ColSpan(at, at + 1), "`(` is never closed", _ADVICE[UNCLOSED_PAREN])
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
        return Problem(INVALID_ARROW, whole, message, _ADVICE[INVALID_ARROW])
    bad_id = _BAD_ID.match(text)
    if bad_id and not re.fullmatch(_ID, bad_id.group("id"), re.ASCII):
        written = bad_id.group("id")
        span = ColSpan(bad_id.start("id") + 1, bad_id.end("id") + 1)
        message = f"node id `{written}` has characters other than letters, digits and `_`"
        clean = re.sub(r"[^A-Za-z0-9_]+", "_", written)
        fix = _fixed(text, span, clean) if clean.strip("_") else None
        if fix:
            return Problem(INVALID_ID, span, message, f"write `{_shown(fix[0])}`", fix[1])
        return Problem(INVALID_ID, span, message, _ADVICE[INVALID_ID])
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
    return Problem(MISSING_COLON, where, message, _ADVICE[MISSING_COLON])


def _generic_error(text: str, error: UnexpectedInput) -> Problem:
    col = max(getattr(error, "column", 1) or 1, 1)
    if isinstance(error, UnexpectedCharacters):
        ch = text[col - 1] if col - 1 < len(text) else ""
        return Problem(INVALID_SYNTAX, ColSpan(col, col + 1), f"unexpected character `{ch}`", _ADVICE[INVALID_SYNTAX])
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
                   _ADVICE[INVALID_SYNTAX])


# -- files -----------------------------------------------------------------------

@dataclass
class ParseResult:
    program: Program
    diagnostics: list[Diagnostic]
    source: str = ""

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def syntax_ok(self) -> bool:
        """No line failed to parse (unknown names may remain)."""
        return not any(d.code in _SYNTAX_CODES for d in self.diagnostics)


_SYNTAX_CODES = frozenset({INVALID_SYNTAX, INVALID_ARROW, UNCLOSED_PAREN, MARKDOWN_FENCE, BEFORE_HEADER,
                           MALFORMED_HEADER, INVALID_ID, MISSING_COLON, EMPTY_FILE, UNREADABLE_FILE})


@dataclass
class _OpenBlock:
    name: str
    line: int
    header_cols: ColSpan
    leading: tuple[str, ...]
    header_comment: Optional[str]
    nodes: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    last_line: int = 0
    last_end: int = 0
    implicit: bool = False  # no header: named after the file

    def close(self, trailing: list[str]) -> Block:
        end_line = self.last_line or self.line
        end_col = self.last_end if self.last_line else self.header_cols.end_col
        return Block(self.name, tuple(self.nodes), tuple(self.edges), self.leading, self.header_comment,
                     tuple(trailing), Span(self.line, 1, end_line, end_col),
                     Span.on_line(self.line, self.header_cols))


# `tuple.__new__(Span, ...)` builds a Span without NamedTuple's Python-level __new__ (hot path).
_new_tuple = tuple.__new__


def _has_header(lines, start):
    """Whether any line from `start` on is a header (lines as `parse` splits them)."""
    for line in lines[start:]:
        if line.strip(_BLANK) and type(parse_line(line).item) is HeaderLine:
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


def parse(text: str, path: str = "<string>") -> ParseResult:
    """Parse a whole file. Never raises on bad input: problems become diagnostics.

    Comment lines attach to the item (header, node or edge) that follows them;
    comments at the end of a block are its trailing comments.
    """
    sink = DiagnosticSink(path)
    emit = sink.emit
    blocks: list[Block] = []
    pending: list[str] = []
    current: Optional[_OpenBlock] = None
    has_header: Optional[bool] = None  # known once a node or edge comes before any header
    reported_before_header = False
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    _intern(lines)
    interned = _LINES.get
    lineno = 0
    for line in lines:
        lineno += 1
        # Blank means what the grammar ignores (space, tab, form feed, CR), not every Unicode space.
        if not line.strip(_BLANK):
            continue
        parsed = interned(line) or parse_line(line)
        item = parsed.item
        kind = type(item)
        if parsed.problems:
            block_name = item.name if kind is HeaderLine else current.name if current else None
            for p in parsed.problems:
                help_text, fix = p.help, None
                if p.fix is not None:
                    if item is None and not _fix_fits(p.code, current, lines, lineno):
                        help_text = _ADVICE[p.code]
                    else:
                        fix = Fix.replace(Span.on_line(lineno, p.fix[0]), p.fix[1])
                emit(p.code, p.message, _new_tuple(Span, (lineno, p.cols[0], lineno, p.cols[1])), help_text,
                     block=block_name, fix=fix)
        if item is None:
            if parsed.comment is not None and not parsed.problems:
                pending.append(parsed.comment)
            continue
        if kind is HeaderLine:
            if current is not None:
                blocks.append(current.close([]))
            current = _OpenBlock(item.name, lineno, item.cols, tuple(pending), parsed.comment)
            pending = []
            continue
        cols = item.cols
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
            header = f"##{header_name(implicit_name)}##"
            emit(MISSING_HEADER, f"no `##Name##` header; the lines form one block named `{implicit_name}`",
                 Span.on_line(lineno, cols), f"add `{header}` as the first line",
                 fix=Fix.replace(Span(1, 1, 1, 1), header + "\n"))
            current = _OpenBlock(implicit_name, lineno, ColSpan(1, 1), (), None, implicit=True)
        span = _new_tuple(Span, (lineno, cols[0], lineno, cols[1]))
        leading = tuple(pending) if pending else ()
        if kind is NodeLine:
            current.nodes.append(Node(item.id, item.op_name, item.args, parsed.comment, leading, span,
                                      item.id_cols, item.op_cols, item.params))
        else:
            current.edges.append(Edge(item.sources, item.target, parsed.comment, leading, span,
                                      item.source_cols, item.target_cols))
        if pending:
            pending = []
        current.last_line = lineno
        current.last_end = cols[1]
    if current is not None:
        blocks.append(current.close(pending))
    elif not sink.items:
        emit(EMPTY_FILE, "the file holds no block", Span(1, 1, 1, 1), "write a header, nodes and edges")
    return ParseResult(Program(tuple(blocks), path), sink.items, text)


def parse_file(path: Union[str, Path]) -> ParseResult:
    """Parse a file from disk; an unreadable file becomes a NAD100 diagnostic."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a byte-order mark is not content
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        diag = Diagnostic(UNREADABLE_FILE, f"cannot read `{name}`: {reason}", Span(1, 1, 1, 1),
                          "check the path and that the file is UTF-8 text", name)
        return ParseResult(Program((), name), [diag], "")
    return parse(text, name)
