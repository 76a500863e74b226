"""The block language's grammar for constrained decoding (`nadc grammar`).

An LLM sampler that follows a grammar can only write text that parses: llama.cpp takes GBNF
in its `grammar` field, vLLM's structured outputs take a grammar too. The line forms here are
those of grammar/nad.lark (header, node, edge, comment, blank line); what the Lark grammar
leaves open and the front end checks after parsing is narrowed from the operation registry
(nader.dsl.ops): an operation is one of the registry's names, each keyword is one of that
operation's parameters (declared order, each at most once, required ones present), each value
has its parameter kind's form and expressions use only size symbols. The text is therefore a
subset of what the compiler accepts, written the way `nadc fmt` writes it (no spaces inside a
line). The input limits (line length, digits, nodes per block) stay the compiler's to check.

All three formats are rendered from one rule set (`rules()`), so they cannot drift apart;
tests/test_grammar_export.py samples it and parses every sample with the front end.

The reply form (`rules(reply=True)`, `nadc grammar --reply`), what the Modifier sends for a base
block, is one block with no comment or blank line: constrained to the full grammar, Gemma 3 270M
on llama.cpp's server wrote its block as comment lines (`#2:Conv2d(...)`) and repeated
`# ResNetBasic##` until the token limit, and allowed any number of blocks, it wrote its block
again and again; a reply has no use for comments, and after one block only the end may follow.

An edit reply's grammar can be specialised to the parent it edits (`rules(reply="edits",
parent=block)`, `nadc grammar --reply edits --parent FILE`, what the Modifier sends): `replace`
and `remove` name one of the parent's operation nodes, an inserted or replaced node is a
computing operation (not `input` or `output`), and new ids are fresh by construction: the first
`insert` takes the parent's first free id, the next the one after, and so on (at most `NEW_IDS`),
and an edge or an `insert ... after` names a new id only once it is inserted. The grammar counts
the lines and inserts written so far in its rules (`edits-N-inserts-K`: after N lines and K
inserts), which a context-free grammar can, where "each id at most once in any order" would
need a rule per set of ids used. It has no `add`: a new node comes in with `insert ID:OP after
A`, connected by construction, and `connect`/`disconnect` give it more inputs or other
consumers, so nothing is lost but the unconnected node. Constrained to the generic form, Gemma 3
270M wrote `replace 3x3:BN`, `remove 0s` and `add 1:input`, none of which can apply; given `add`
with the parent's ids, it restated the parent's nodes as `add` lines it never connected; given
the next free ids in any order, it wrote `insert 9:...` and `insert 10:...` again and again, ids
already taken, in 24 of 24 replies (benchmarks/README.md). `most` bounds the edit lines (the
Modifier sends `SMALL_EDITS_PER_REPLY` where the profile says the model is small: such a model
never ends an edit reply on its own).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional, Union

from nader.dsl.edits import EDITS_PER_REPLY
from nader.dsl.expr import SIZE_SYMBOLS
from nader.dsl.ir import Block
from nader.dsl.ops import REGISTRY, Group, OpDef, Param, ParamKind

#: The most characters of a reply's block name (NADER's names are words such as `ResNetBasic`).
HEADER_CHARS = 32
#: How many new ids a parent's edit grammar offers to `insert`, in order: the next free ones.
NEW_IDS = 6

# -- the rule model: enough of EBNF for the three formats ---------------------------

@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Chars:
    """One character from `ranges` (pairs of first and last character), or not from them when `negated`."""

    ranges: tuple[tuple[str, str], ...]
    negated: bool = False


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Alt:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Rep:
    """`item` repeated: `?` (0, 1), `*` (0, None) or `+` (1, None)."""

    item: "Expr"
    min: int
    max: Optional[int]


Expr = Union[Lit, Chars, Ref, Seq, Alt, Rep]


def seq(*items: Union[Expr, str]) -> Expr:
    parts = tuple(Lit(i) if isinstance(i, str) else i for i in items)
    return parts[0] if len(parts) == 1 else Seq(parts)


def alt(*items: Union[Expr, str]) -> Expr:
    parts = tuple(Lit(i) if isinstance(i, str) else i for i in items)
    return parts[0] if len(parts) == 1 else Alt(parts)


def opt(*items) -> Expr:
    return Rep(seq(*items), 0, 1)


def star(*items) -> Expr:
    return Rep(seq(*items), 0, None)


def plus(*items) -> Expr:
    return Rep(seq(*items), 1, None)


def chars(spec: str, negated: bool = False) -> Chars:
    """A class from a spec such as `A-Za-z0-9_` (a `-` between two characters makes a range)."""
    ranges, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((spec[i], spec[i + 2]))
            i += 3
        else:
            ranges.append((spec[i], spec[i]))
            i += 1
    return Chars(tuple(ranges), negated)


# -- the language ---------------------------------------------------------------

ROOT = "root"

# Expression symbols by parameter kind: channel counts use C and dim (not H, W), shapes all of them.
_SIZE_SYMBOLS = ("C", "dim")
_VALUE_RULES = {
    ParamKind.SIZE: "size-value",
    ParamKind.SPATIAL: "spatial-value",
    ParamKind.AXIS: "axis-value",
    ParamKind.AXES: "axes-value",
    ParamKind.SHAPE: "shape-value",
    ParamKind.PROBABILITY: "probability-value",
    ParamKind.FLAG: "flag-value",
}


REPLIES = ("block", "edits")


def reply_form(reply: Union[bool, str, None]) -> Optional[str]:
    """`block`, `edits` or None (the language) from `rules`' and `render_grammar`'s `reply` (True: `block`)."""
    if reply is True:
        return "block"
    if not reply:
        return None
    if reply not in REPLIES:
        raise ValueError(f"unknown reply form {reply!r}; one of {', '.join(REPLIES)}")
    return reply


def upto(item: Expr, most: int) -> Expr:
    """`item` one to `most` times, as nested options (`a (a (a)?)?`): every format can write it."""
    out: Expr = item
    for _ in range(most - 1):
        out = seq(item, Rep(out, 0, 1))
    return out


def rules(reply: Union[bool, str] = False, parent: Optional[Block] = None,
          most: int = EDITS_PER_REPLY) -> dict[str, Expr]:
    """The grammar as rules by name, `root` first; rule names are dashed lowercase words. With
    `reply` (`block` or True), an LLM's reply: one block of header, node and edge lines only, no comment or blank
    line (a small model constrained to the full grammar wrote its block as comments, and to blocks
    of any number, repeated its block until the token limit). With `reply="edits"`, an edit reply
    (nader.dsl.edits): a header, then one to `most` (at most EDITS_PER_REPLY) edit lines; bounded,
    so a model that does not stop still ends. With `parent` (edits only), the ids and operations
    are the parent's and new ids are fresh (see the module's docstring)."""
    form = reply_form(reply)
    if parent is not None and form != "edits":
        raise ValueError("a parent specialises only the edit reply's grammar (reply='edits')")
    if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= EDITS_PER_REPLY:
        raise ValueError(f"an edit reply holds 1 to {EDITS_PER_REPLY} edits, not {most!r}")
    reply = form is not None
    g: dict[str, Expr] = {}
    if parent is not None:
        g[ROOT] = seq(Ref("header-line"), Ref(_state(0, 0)))
        g["header-line"] = seq("##", Ref("header-name"), "##", "\n")
        g.update(_parent_edits(parent, most))
    elif form == "edits":
        g[ROOT] = seq(Ref("header-line"), upto(Ref("edit-line"), most))
        g["edit-line"] = seq(alt(seq("add ", Ref("node-line")), seq("replace ", Ref("node-line")),
                                 seq("insert ", Ref("node-line"), " after ", Ref("node-id")),
                                 seq("remove ", Ref("node-id")), seq("connect ", Ref("edge-line")),
                                 seq("disconnect ", Ref("node-id"), "->", Ref("node-id"))), "\n")
        g["header-line"] = seq("##", Ref("header-name"), "##", "\n")
    elif reply:
        g[ROOT] = Ref("block")
        g["block"] = seq(Ref("header-line"), plus(Ref("body-line")))
        g["body-line"] = seq(alt(Ref("node-line"), Ref("edge-line")), "\n")
        g["header-line"] = seq("##", Ref("header-name"), "##", "\n")
    else:
        g[ROOT] = seq(star(Ref("free-line")), plus(Ref("block")))
        g["block"] = seq(Ref("header-line"), star(Ref("body-line")))
        g["free-line"] = seq(alt(Ref("comment"), star(chars(" \t"))), "\n")
        g["body-line"] = alt(seq(alt(Ref("node-line"), Ref("edge-line")), opt(Ref("trailing-comment")), "\n"),
                             Ref("free-line"))
        g["header-line"] = seq("##", Ref("header-name"), "##", opt(Ref("trailing-comment")), "\n")
    # A reply's block name is one word: Gemma 3 270M wrote sentences into a header of several; and a
    # short one: given any length, it wrote a name of 1,300 to 2,500 characters until max_tokens in 3
    # of 35 edit replies (`SE-ResNet_0148955.py-ResNet-Model-0036237.txt-...`).
    name = chars("A-Za-z0-9_.-")
    g["header-name"] = upto(name, HEADER_CHARS) if reply else seq(Ref("name-word"), star(" ", Ref("name-word")))
    if not reply:
        g["name-word"] = plus(name)
    if not reply:
        # A space first: a comment right after a header's `##` would make it `###...`.
        g["trailing-comment"] = seq(plus(chars(" \t")), Ref("comment"))
        # One '#': a line starting with '##' is a header.
        g["comment"] = seq("#", opt(chars("#\r\n", negated=True), star(chars("\r\n", negated=True))))
    if parent is not None:
        g["compute-operation"] = alt(*(Ref(op_rule(d)) for op, d in REGISTRY.items() if op in Group.COMPUTE))
    else:
        # The language reads a chain `a->b->c` as two edges; a reply keeps the canonical one edge a line.
        g["edge-line"] = seq(Ref("node-id"), star(",", Ref("node-id")), "->", Ref("node-id"),
                             *(() if reply else (star("->", Ref("node-id")),)))
        g["node-id"] = plus(chars("A-Za-z0-9_"))
        g["node-line"] = seq(Ref("node-id"), ":", Ref("operation"))
        g["operation"] = alt(*(Ref(op_rule(d)) for d in REGISTRY.values()))
    used_kinds: list[ParamKind] = []
    for d in REGISTRY.values():
        g[op_rule(d)] = _operation(d)
        used_kinds += [p.kind for p in d.params if p.kind not in used_kinds]
    for kind in ParamKind:
        if kind in used_kinds:
            g[_VALUE_RULES[kind]] = _value(kind)
    g.update(_expressions("size", _SIZE_SYMBOLS))
    g.update(_expressions("shape", SIZE_SYMBOLS))
    g["int"] = alt("0", Ref("positive-int"))
    g["positive-int"] = seq(chars("1-9"), star(chars("0-9")))
    return g


def _state(lines: int, inserts: int) -> str:
    """The rule of what may follow `lines` edit lines of which `inserts` were inserts."""
    return rule_name(f"edits-{lines}-inserts-{inserts}")


def op_ids(parent: Block) -> list[str]:
    """The ids of `parent`'s operation nodes: what `replace` and `remove` may name."""
    return [str(n.id) for n in parent.nodes if n.op in Group.COMPUTE]


def new_ids(parent: Block, most: int = EDITS_PER_REPLY) -> list[str]:
    """The ids `insert` gives new nodes, in order, in edits of `parent` of at most `most` lines: the
    smallest ids the parent does not use (what the prompt tells the model, and its grammar enforces)."""
    taken = {str(n.id) for n in parent.nodes}
    out, number = [], 0
    while len(out) < min(NEW_IDS, most):
        if str(number) not in taken:
            out.append(str(number))
        number += 1
    return out


def _parent_edits(parent: Block, most: int) -> dict[str, Expr]:
    """The edit lines of a grammar for `parent`, by state: after N lines and K inserts, a line
    names the parent's ids and the first K new ones, and the next insert takes new id K."""
    ops = op_ids(parent)
    sources = [str(n.id) for n in parent.nodes if n.op in Group.SOURCE]
    sinks = [str(n.id) for n in parent.nodes if n.op in Group.SINK]
    new = new_ids(parent, most)
    # Longest first: a GBNF alternative that is a prefix of another ("1" of "12") must not win early.
    by_length = lambda ids: alt(*sorted(ids, key=lambda i: (-len(i), i)))  # noqa: E731
    g: dict[str, Expr] = {}
    if ops:
        g["op-id"] = by_length(ops)
    for k in range(len(new) + 1):
        source, target, line = (rule_name(f"{what}-{k}-new") for what in ("source-id", "target-id", "edit-line"))
        g[source], g[target] = by_length([*ops, *new[:k], *sources]), by_length([*ops, *new[:k], *sinks])
        changes = [seq("replace ", Ref("op-id"), ":", Ref("compute-operation")), seq("remove ", Ref("op-id"))] \
            if ops else []
        g[line] = seq(alt(*changes, seq("connect ", Ref(source), star(",", Ref(source)), "->", Ref(target)),
                          seq("disconnect ", Ref(source), "->", Ref(target))), "\n")
        if k < len(new):
            g[rule_name(f"insert-line-{k}-new")] = seq("insert ", new[k], ":", Ref("compute-operation"), " after ",
                                                       Ref(source), "\n")
    for n in range(most):
        for k in range(min(n, len(new)) + 1):
            def then(rule: str, inserts: int) -> Expr:
                return Ref(rule) if n + 1 == most else seq(Ref(rule), opt(Ref(_state(n + 1, inserts))))
            ways = [then(rule_name(f"edit-line-{k}-new"), k)]
            if k < len(new):
                ways.append(then(rule_name(f"insert-line-{k}-new"), k + 1))
            g[_state(n, k)] = alt(*ways)
    return g


_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def rule_name(text: str) -> str:
    """`text` as a rule name of dashed lowercase words: digits spelt (`conv-two-d` for Conv2d; some
    GBNF readers take no digits in names), `_` as `-`."""
    name = "".join(f"-{_DIGITS[int(ch)]}-" if ch.isdigit() else ch for ch in text.lower())
    return "-".join(part for part in name.replace("_", "-").split("-") if part)


def op_rule(d: OpDef) -> str:
    """The name of `d`'s rule: `op-conv-two-d` for Conv2d."""
    return "op-" + rule_name(d.name)


def _operation(d: OpDef) -> Expr:
    if not d.params:
        return Lit(d.name)
    variadic = [p for p in d.params if p.variadic]
    if variadic:  # `permute(0,2,3,1)`: positional values only
        value = Ref(_VALUE_RULES[variadic[0].kind])
        return seq(d.name, "(", value, star(",", value), ")")
    args = _keywords(d.params)
    if any(p.required for p in d.params):
        return seq(d.name, "(", args, ")")
    return seq(d.name, opt("(", args, ")"))


def _keywords(params: tuple[Param, ...]) -> Expr:
    """`name=value` pairs in declared order, each at most once, the required ones present: one
    alternative per parameter that can come first (those up to the first required one)."""
    def pair(p: Param) -> Expr:
        return seq(p.name, "=", Ref(_VALUE_RULES[p.kind]))

    def rest(after: int) -> list[Expr]:
        return [seq(",", pair(p)) if p.required else opt(",", pair(p)) for p in params[after:]]

    firsts = []
    for i, p in enumerate(params):
        firsts.append(seq(pair(p), *rest(i + 1)))
        if p.required:
            break
    return alt(*firsts)


def _value(kind: ParamKind) -> Expr:
    if kind is ParamKind.SIZE:
        return Ref("size-expr")
    if kind is ParamKind.SPATIAL:
        return alt(Ref("positive-int"), seq("(", Ref("positive-int"), ",", Ref("positive-int"), ")"))
    if kind is ParamKind.AXIS:
        return seq(opt("-"), Ref("int"))
    if kind is ParamKind.AXES:
        axis = Ref(_VALUE_RULES[ParamKind.AXIS])
        return alt(axis, seq("(", axis, plus(",", axis), ")"))
    if kind is ParamKind.SHAPE:
        return alt("-1", Ref("shape-expr"))
    if kind is ParamKind.PROBABILITY:
        return seq("0", opt(".", plus(chars("0-9"))))
    if kind is ParamKind.FLAG:
        return alt("0", "1")
    raise ValueError(f"no value form for parameter kind {kind}")  # a new kind must get one here


def _expressions(prefix: str, symbols) -> dict[str, Expr]:
    """Sums of products over integers and `symbols`, with parentheses (no unary minus)."""
    expr, term, factor = f"{prefix}-expr", f"{prefix}-term", f"{prefix}-factor"
    return {
        expr: seq(Ref(term), star(alt("+", "-"), Ref(term))),
        term: seq(Ref(factor), star(alt("*", "//", "/"), Ref(factor))),
        factor: alt(Ref("int"), *symbols, seq("(", Ref(expr), ")")),
    }


# -- rendering --------------------------------------------------------------------

_HEADER = ("NADER block language, generated by `nadc grammar`: the line forms of grammar/nad.lark, "
           "the operations and parameters of the registry.")
_REPLY = (f" The form of an LLM's reply (`--reply`): one block of header (one word of at most {HEADER_CHARS} characters),"
          " node and edge lines, no comment or blank line.")
_EDITS = (f" The form of an LLM's edit reply (`--reply edits`): a header (one word of at most {HEADER_CHARS} characters),"
          " then 1 to {most} lines of `add ID:OP`, `replace ID:OP`, `insert ID:OP after A`, `remove ID`,"
          " `connect A,B->C`, `disconnect A->C`.")


class _Style(NamedTuple):
    """How a format writes comments, definitions, rule names and terminals."""

    comment: str  # "{}" stands for the text
    defines: str
    name: Callable[[str], str]
    atom: Callable[[Union[Lit, Chars]], str]


def render_grammar(fmt: str, reply: Union[bool, str] = False, parent: Optional[Block] = None,
                   most: int = EDITS_PER_REPLY) -> str:
    """The grammar in `fmt` (one of FORMATS); of an LLM's reply with `reply` (see `rules`), edits of
    `parent` with one, at most `most` of them."""
    form = reply_form(reply)
    if fmt not in _STYLES:
        raise ValueError(f"unknown grammar format {fmt!r}; one of {', '.join(FORMATS)}")
    about = _HEADER + {None: "", "block": _REPLY, "edits": _EDITS.format(most=most)}[form]
    if parent is not None:
        about += (f" Specialised to edits of the block `{parent.name}`: its node ids, and new nodes come in with"
                  f" `insert` (no `add`), each taking the next of its {min(NEW_IDS, most)} free ids in order.")
    return render_rules(fmt, rules(reply, parent, most), about)


def render_rules(fmt: str, g: dict[str, Expr], about: str) -> str:
    """Rules (`root` first) in `fmt`, after a comment line `about`: how every grammar we export is
    written, this language's and the reply forms others declare with this module's rule model (the
    NAS-Bench-201 cell reply, `nader.search.spaces.nb201`)."""
    if fmt not in _STYLES:
        raise ValueError(f"unknown grammar format {fmt!r}; one of {', '.join(FORMATS)}")
    style = _STYLES[fmt]
    width = max(len(style.name(n)) for n in g)
    lines = [style.comment.format(about)]
    lines += [f"{style.name(rule).ljust(width)} {style.defines} {_expr(body, style)}" for rule, body in g.items()]
    return "\n".join(lines) + "\n"


def _expr(e: Expr, style: _Style, where: str = "rule") -> str:
    """`e` as text, standing alone (`rule`), in a sequence (`seq`) or under a repetition (`rep`):
    an alternative needs parentheses in both, a sequence or a repetition under a repetition."""
    if isinstance(e, Ref):
        return style.name(e.name)
    if isinstance(e, (Lit, Chars)):
        return style.atom(e)
    if isinstance(e, Alt):
        text = " | ".join(_expr(i, style) for i in e.items)
        return f"({text})" if where != "rule" else text
    if isinstance(e, Seq):
        text = " ".join(_expr(i, style, "seq") for i in e.items)
        return f"({text})" if where == "rep" else text
    suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}[(e.min, e.max)]
    item = _expr(e.item, style, "rep")
    return (f"({item})" if isinstance(e.item, Rep) else item) + suffix


def _lark_name(rule: str) -> str:
    return "start" if rule == ROOT else rule.replace("-", "_")


_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(text: str, special: str) -> str:
    """`text` with a backslash before `special` characters and `\\n`, `\\r`, `\\t` for controls: the
    escapes GBNF, Lark and Python's `re` all read (GBNF has no `\\-`, so a class puts `-` last)."""
    return "".join(_CONTROL.get(ch) or ("\\" + ch if ch in special else ch) for ch in text)


def _class_text(c: Chars) -> str:
    def one(ch: str) -> str:
        return _escaped(ch, "\\[]")

    body = "".join(one(a) if a == b else f"{one(a)}-{one(b)}" for a, b in c.ranges)
    return f"[{'^' if c.negated else ''}{body}]"


def _literal(e: Lit) -> str:
    return '"' + _escaped(e.text, '"\\') + '"'


def _gbnf(e: Union[Lit, Chars]) -> str:
    return _literal(e) if isinstance(e, Lit) else _class_text(e)


def _lark(e: Union[Lit, Chars]) -> str:
    return _literal(e) if isinstance(e, Lit) else f"/{_class_text(e)}/"


def _ebnf_char(ch: str) -> str:
    """A class member as W3C writes it: letters, digits, `_` and `.` as they are, others as `#xN`."""
    return ch if ch.isalnum() or ch in "_." else f"#x{ord(ch):X}"


def _ebnf(e: Union[Lit, Chars]) -> str:
    """W3C notation: quoted strings, `#xN` for a character a string cannot show, `[...]` classes."""
    if isinstance(e, Lit):
        if all(ch.isprintable() for ch in e.text) and '"' not in e.text:
            return f'"{e.text}"'
        return " ".join(f'"{ch}"' if ch.isprintable() and ch != '"' else f"#x{ord(ch):X}" for ch in e.text)
    body = "".join(_ebnf_char(a) if a == b else f"{_ebnf_char(a)}-{_ebnf_char(b)}" for a, b in e.ranges)
    return f"[{'^' if e.negated else ''}{body}]"


_STYLES = {
    "gbnf": _Style("# {}", "::=", str, _gbnf),
    "lark": _Style("// {}", ":", _lark_name, _lark),
    "ebnf": _Style("/* {} */", "::=", str, _ebnf),
}
FORMATS = tuple(_STYLES)
