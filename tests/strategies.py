"""Hypothesis strategies for the block language, shared by the test suite.

IR level (objects built directly, without spans; `Node.params` is empty:
format and re-parse them, e.g. with `parsed_programs()`, to get what the
parser builds):

* `exprs(symbols)`: expressions over numbers and symbols, `+ - * / //`, unary minus.
* `values_for(kind)`: a plausible argument value for a `ParamKind`.
* `arg_lists(opdef, wild=False)`: arguments for an operation, keyword and
  positional, in random order; `wild=True` adds unknown names and arbitrary values.
* `comments()`: comment texts as the parser stores them (`# ...`).
* `blocks(...)`: a block of registered operations with input terminal(s) and
  an output, arities respected, every node on a path from an input to the
  output, random ids (integers and names), line order, arguments and
  comments. Not shape-checked.
* `with_named_ids(block)`: the same block with every id renamed to a name.
* `sound_blocks()`: base blocks (`(B,C,H,W) -> (B,C,H,W)`) built to pass the
  verifier: channel counts tracked, merges only of equal shapes.
* `programs(...)`: one to three blocks (trailing comment lines only on the last
  block, where the parser can produce them).

Text level:

* `program_texts()`: canonical text of a random program.
`noisy(text)`, `mutated(text)`, `mutated_texts()` and `compat_texts(root)` are in
text_strategies.py.
"""
from __future__ import annotations

import functools
from fractions import Fraction
from typing import Iterable, Optional

from hypothesis import strategies as st

from nader.dsl.expr import SIZE_SYMBOLS, BinOp, Neg, Num, Sym, TupleValue, Value
from nader.dsl.ir import Arg, Block, Edge, Node, Program, Role
from nader.dsl.ops import REGISTRY, Arity, Group, Op, OpDef, ParamKind, lookup

# -- names and comments ------------------------------------------------------------

HEADER_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
header_names = st.text(HEADER_CHARS, min_size=1, max_size=12)
#: Header names that give a block the base role (`X_downsample`, `stem`, ... name another role).
base_names = header_names.filter(lambda name: Block(name, (), ()).inferred_role() is Role.BASE)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True)
#: Named node ids as NADER's agents write them (`2a`, `conv_1`); never all digits (those are integers).
node_names = st.one_of(
    st.from_regex(r"[0-9]{1,2}[a-z]", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_]{1,6}", fullmatch=True).filter(lambda name: not name.isdigit()))
unknown_op_names = identifiers.filter(lambda name: lookup(name) is None)


def _comment_text(gap: str, body: str) -> str:
    text = "#" + gap + body
    if text.startswith("##"):
        text = "# " + text.lstrip("#")
    return text.rstrip()


_COMMENT_BODIES = st.one_of(
    st.sampled_from(["", "gate", "skip connection", "2:ReLU", "0->1", "##X##", "#", "a # b", "(x", "ünï cödé ✓",
                     "tab\there", "trailing # hash #", "C*2//(3-dim)", "`code`", "```"]),
    st.text("abcxyz ABC0123456789_:()->,=*/+#'\"`~.", max_size=10),
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=6))


@functools.lru_cache(maxsize=None)
def comments():
    """A comment as the parser stores it: `#`, not `##`, no trailing blanks."""
    return st.builds(_comment_text, st.sampled_from([" ", "", "  "]), _COMMENT_BODIES)


#: No comment (three times in four), or one.
maybe_comment = st.one_of(st.none(), st.none(), st.none(), comments())
#: Comment lines before an item: none (three times in four), one or two.
leading_comments = st.one_of(st.just(()), st.just(()), st.just(()),
                             st.lists(comments(), min_size=1, max_size=2).map(tuple))

# -- expressions -------------------------------------------------------------------

small_ints = st.integers(min_value=0, max_value=64).map(Num)
floats = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False).map(lambda x: Num(abs(x)))


def exprs(symbols: Iterable[str] = SIZE_SYMBOLS, max_leaves: int = 6, with_floats: bool = True):
    """Expressions as the parser builds them: numbers are never negative (`-2` is `Neg(Num(2))`)."""
    return _exprs(tuple(symbols), max_leaves, with_floats)


@functools.lru_cache(maxsize=None)
def _exprs(symbols: tuple[str, ...], max_leaves: int, with_floats: bool):
    atoms = [small_ints, st.integers(min_value=0, max_value=10**12).map(Num)]
    symbols = list(symbols)
    if symbols:
        atoms.append(st.sampled_from(symbols).map(Sym))
    if with_floats:
        atoms.append(floats)
    leaves = st.one_of(*atoms)
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(Neg, inner),
            st.builds(BinOp, st.sampled_from(["+", "-", "*", "/", "//"]), inner, inner)),
        max_leaves=max_leaves)


def tuples(items, min_size: int = 2, max_size: int = 4):
    return st.lists(items, min_size=min_size, max_size=max_size).map(lambda xs: TupleValue(tuple(xs)))


def _axis():
    return st.one_of(st.integers(0, 3).map(Num), st.integers(1, 3).map(lambda k: Neg(Num(k))))


_SIZE_EXPRS = st.one_of(
    st.sampled_from(["C", "dim"]).map(Sym),
    st.builds(lambda s, k, op: BinOp(op, Sym(s), Num(k)), st.sampled_from(["C", "dim"]), st.sampled_from([2, 4]),
              st.sampled_from(["*", "/", "//"])),
    st.integers(1, 64).map(Num),
    exprs(("C", "dim"), max_leaves=4, with_floats=False),
)


@functools.lru_cache(maxsize=None)
def values_for(kind: ParamKind):
    """A plausible value for a parameter of this kind (not checked against the rules)."""
    if kind is ParamKind.SIZE:
        return _SIZE_EXPRS
    if kind is ParamKind.SPATIAL:
        k = st.integers(1, 7).map(Num)
        return st.one_of(k, tuples(k, 2, 2))
    if kind is ParamKind.AXIS:
        return _axis()
    if kind is ParamKind.AXES:
        return st.one_of(_axis(), tuples(_axis(), 2, 3))
    if kind is ParamKind.SHAPE:
        return st.one_of(st.just(Neg(Num(1))), st.sampled_from(SIZE_SYMBOLS).map(Sym),
                         exprs(SIZE_SYMBOLS, max_leaves=3, with_floats=False))
    if kind is ParamKind.PROBABILITY:
        return st.one_of(st.just(Num(0)), st.floats(0, 0.9).map(lambda x: Num(abs(x))))
    if kind is ParamKind.FLAG:
        return st.sampled_from([0, 1]).map(Num)
    raise AssertionError(f"no strategy for {kind}")


any_values = st.one_of(exprs(max_leaves=4), tuples(exprs(max_leaves=3)))
_ANY_ARGS = st.lists(st.builds(Arg, st.one_of(st.none(), identifiers), any_values), max_size=4).map(tuple)


@st.composite
def arg_lists(draw, opdef: Optional[OpDef], wild: bool = False) -> tuple[Arg, ...]:
    """Arguments for `opdef` (None: an unknown operation, arbitrary arguments).

    Required parameters are always given, optional ones sometimes; a prefix is
    positional, the rest keywords in random order. Variadic parameters get one
    to four positional values. `wild` mixes in unknown keywords and values of
    any kind.
    """
    if opdef is None or (wild and draw(st.booleans())):
        return draw(_ANY_ARGS)
    params = list(opdef.params)
    variadic = next((p for p in params if p.variadic), None)
    if variadic is not None:
        count = draw(st.integers(1, 4))
        return tuple(Arg(None, draw(values_for(variadic.kind))) for _ in range(count))
    chosen = [p for p in params if p.required or draw(st.booleans())]
    values = {p.name: draw(any_values if wild and draw(st.booleans()) else values_for(p.kind)) for p in chosen}
    # A positional prefix is only possible while the chosen parameters follow the signature.
    prefix = 0
    while prefix < len(chosen) and chosen[prefix] is params[prefix]:
        prefix += 1
    positional = draw(st.integers(0, prefix))
    keywords = draw(st.permutations(chosen[positional:]))
    args = [Arg(None, values[p.name]) for p in chosen[:positional]]
    args += [Arg(p.name, values[p.name]) for p in keywords]
    if wild and draw(st.booleans()):
        args.append(Arg(draw(identifiers), draw(any_values)))
    return tuple(args)


# -- blocks ------------------------------------------------------------------------

COMPUTE_OPS = sorted(Group.COMPUTE, key=lambda op: op.value)


def _input_count(arity: Arity, draw) -> int:
    if arity.max == arity.min:
        return arity.min
    return draw(st.integers(arity.min, arity.max if arity.max is not None else arity.min + 2))


def _edge_lines(draw, wires: list[tuple[int, list[int]]], shuffle: bool) -> list[tuple[tuple[int, ...], int]]:
    """Edge lines for (target, sources in operand order): `a,b->c` or one line per source."""
    lines: list[tuple[tuple[int, ...], int]] = []
    for target, sources in wires:
        rest = list(sources)
        while rest:
            take = draw(st.integers(1, len(rest)))
            lines.append((tuple(rest[:take]), target))
            rest = rest[take:]
    if shuffle:
        lines = draw(st.permutations(lines))
    return lines


@st.composite
def blocks(draw, cell: Optional[bool] = None, max_nodes: int = 8, with_comments: bool = True,
           unknown_ops: bool = False, wild_args: bool = False, shuffle: Optional[bool] = None,
           name=None, trailing_comments: bool = False, named: bool = True) -> Block:
    """A block as described in the module docstring.

    `cell`: two inputs `input1`, `input2` (None: either). `shuffle`: ids
    and line order random (None: either; False: NADER's style, inputs 0..,
    output next, the rest numbered in order, edges in topological order).
    `named`: shuffled ids mix integers and names (`2a`, `conv_1`).
    `unknown_ops` / `wild_args` allow unregistered operations and arbitrary
    arguments. Every compute node has as many inputs as its arity allows.
    """
    cell = draw(st.booleans()) if cell is None else cell
    shuffle = draw(st.booleans()) if shuffle is None else shuffle
    count = draw(st.integers(0, max_nodes))
    # Hidden topological order: inputs, compute nodes, output.
    kinds: list[tuple[str, tuple[Arg, ...]]] = [(Op.INPUT1.value, ()), (Op.INPUT2.value, ())] if cell \
        else [(Op.INPUT.value, ())]
    sources = len(kinds)
    operands: list[list[int]] = [[] for _ in kinds]
    for _ in range(count):
        if unknown_ops and draw(st.integers(0, 9)) == 0:
            op_name, arity = draw(unknown_op_names), Arity(1, 1)
            args = draw(arg_lists(None))
        else:
            opdef = REGISTRY[draw(st.sampled_from(COMPUTE_OPS))]
            op_name, arity = opdef.name, opdef.arity
            args = draw(arg_lists(opdef, wild_args))
        position = len(kinds)
        inputs = [draw(st.integers(0, position - 1)) for _ in range(_input_count(arity, draw))]
        kinds.append((op_name, args))
        operands.append(inputs)
    # Connect whatever nobody consumes into the output, through an Add when there are several.
    used = {i for ins in operands for i in ins}
    dangling = [i for i in range(len(kinds)) if i not in used]  # never empty: nothing consumes the last node
    if len(dangling) > 1:
        kinds.append((Op.ADD.value, ()))
        operands.append(dangling)
        dangling = [len(kinds) - 1]
    kinds.append((Op.OUTPUT.value, ()))
    operands.append(dangling)
    total = len(kinds)
    output = total - 1
    # Ids: NADER style is inputs 0.., output next, then the rest in order.
    if shuffle:
        some_ids = st.integers(0, 3 * total + 5) if not named else st.one_of(st.integers(0, 3 * total + 5), node_names)
        ids = draw(st.lists(some_ids, min_size=total, max_size=total, unique=True))
        file_order = draw(st.permutations(range(total)))
    else:
        rank = list(range(sources)) + [output] + list(range(sources, output))
        ids = [0] * total
        for new, hidden in enumerate(rank):
            ids[hidden] = new
        file_order = rank
    comment = (lambda: draw(maybe_comment)) if with_comments else (lambda: None)
    lead = (lambda: draw(leading_comments)) if with_comments else (lambda: ())
    nodes = tuple(Node(ids[h], kinds[h][0], kinds[h][1], comment(), lead()) for h in file_order)
    wires = [(ids[h], [ids[s] for s in operands[h]]) for h in range(total) if operands[h]]
    edges = tuple(Edge(sources_, target, comment(), lead()) for sources_, target in _edge_lines(draw, wires, shuffle))
    return Block(
        draw(header_names) if name is None else name, nodes, edges,
        leading_comments=lead(), header_comment=comment(),
        trailing_comments=lead() if trailing_comments else ())


def rename_ids(block: Block, mapping: dict) -> Block:
    """`block` with its ids replaced through `mapping` (ids it lacks are kept)."""
    from dataclasses import replace

    def new(i):
        return mapping.get(i, i)

    return replace(block, nodes=tuple(replace(n, id=new(n.id)) for n in block.nodes),
                   edges=tuple(replace(e, sources=tuple(new(s) for s in e.sources), target=new(e.target))
                               for e in block.edges))


@st.composite
def with_named_ids(draw, block: Block) -> Block:
    """`block` with every node id replaced by a distinct name (`2a`, `conv_1`, ...)."""
    ids = list(dict.fromkeys(n.id for n in block.nodes))
    names = draw(st.lists(node_names, min_size=len(ids), max_size=len(ids), unique=True))
    return rename_ids(block, dict(zip(ids, names)))


@st.composite
def programs(draw, min_blocks: int = 1, max_blocks: int = 3, **block_options) -> Program:
    """One or more blocks; only the last may end with comment lines."""
    count = draw(st.integers(min_blocks, max_blocks))
    trailing = block_options.pop("trailing_comments", True)
    items = [draw(blocks(trailing_comments=trailing and k == count - 1, **block_options)) for k in range(count)]
    return Program(tuple(items))


def program_texts(**options):
    from nader.dsl.format import format_program

    return programs(**options).map(format_program)


def parsed_programs(**options):
    """Programs as the parser builds them (spans, bound parameters)."""
    from nader.dsl import parse

    return program_texts(**options).map(lambda text: parse(text).program)


# -- blocks meant to verify ------------------------------------------------------

@st.composite
def sound_blocks(draw, max_steps: int = 8, name: Optional[str] = None) -> Block:
    """A base block, `(B,C,H,W) -> (B,C,H,W)`, meant to pass `nadc verify`.

    Channel counts are tracked as multiples of `C` (written `C`, `dim`,
    `C*2`, `C/2`, ...); spatial size never changes (stride 1 throughout);
    merges take tensors of equal shape; an SE-style gate multiplies a
    `(B,C,1,1)` tensor into a `(B,C,H,W)` one; a channels-last detour
    (`permute`, `LN`, `Linear`, `permute`) returns to `(B,C,H,W)`. Whatever
    nobody consumes is projected back to `C` channels and added into the
    output. Ids and lines follow NADER's style.
    """
    nodes: list[tuple[str, tuple[Arg, ...]]] = [("input", ())]
    inputs: list[list[int]] = [[]]
    width: list[Fraction] = [Fraction(1)]  # channels, as a multiple of C
    usable: list[int] = [0]  # nodes of shape (B,w*C,H,W); not the insides of gates and channels-last detours

    def add(op: str, args: tuple[Arg, ...], srcs: list[int], w: Fraction, inner: bool = False) -> int:
        nodes.append((op, args))
        inputs.append(srcs)
        width.append(w)
        if not inner:
            usable.append(len(nodes) - 1)
        return len(nodes) - 1

    def channels(w: Fraction) -> Value:
        if w == 1:
            return draw(st.sampled_from([Sym("C"), Sym("dim")]))
        if w.denominator == 1:
            return draw(st.sampled_from([BinOp("*", Sym("C"), Num(w.numerator)),
                                         BinOp("*", Num(w.numerator), Sym("dim"))]))
        return BinOp("/", BinOp("*", Sym("C"), Num(w.numerator)), Num(w.denominator)) if w.numerator != 1 \
            else BinOp("/", Sym("C"), Num(w.denominator))

    def conv(src: int, w: Fraction, inner: bool = False) -> int:
        args = [Arg("out_channels", channels(w)), Arg("kernel_size", draw(st.sampled_from(
            [Num(1), Num(2), Num(3), Num(5), TupleValue((Num(1), Num(3)))])))]
        if draw(st.booleans()):
            args.append(Arg("stride", Num(1)))
        if draw(st.booleans()):
            args.append(Arg("dilation", Num(draw(st.integers(1, 2)))))
        if width[src].denominator == 1 and w.denominator == 1 and draw(st.booleans()):
            args.append(Arg("groups", Sym("C")))
        return add("Conv2d", tuple(args), [src], w, inner)

    for _ in range(draw(st.integers(1, max_steps))):
        src = draw(st.sampled_from(usable))
        step = draw(st.sampled_from(["conv", "unary", "pool", "merge", "concat", "gate", "channels_last"]))
        if step == "conv":
            conv(src, draw(st.sampled_from([Fraction(1), Fraction(2), Fraction(1, 2), Fraction(4)])))
        elif step == "unary":
            op = draw(st.sampled_from(["BN", "ReLU", "GELU", "Sigmoid", "DropPath"]))
            args = (Arg("prob", Num(0.1)),) if op == "DropPath" and draw(st.booleans()) else ()
            add(op, args, [src], width[src])
        elif step == "pool":
            op = draw(st.sampled_from(["AvgPool2d", "MaxPool2d"]))
            add(op, (Arg("kernel_size", Num(draw(st.integers(1, 5)))), Arg("stride", Num(1))), [src], width[src])
        elif step in ("merge", "concat"):
            same = [i for i in usable if width[i] == width[src]]
            others = draw(st.lists(st.sampled_from(same), min_size=1, max_size=2))
            if step == "merge":
                add(draw(st.sampled_from(["Add", "Mul"])), (), [src, *others], width[src])
            else:
                add("concat", draw(st.sampled_from([(), (Arg("dim", Num(1)),)])), [src, *others],
                    width[src] * (1 + len(others)))
        elif step == "gate":
            pooled = add("mean", (Arg("dim", TupleValue((Num(2), Num(3)))),), [src], width[src], inner=True)
            squeezed = conv(pooled, width[src], inner=True)
            gate = add("Sigmoid", (), [squeezed], width[src], inner=True)
            add("Mul", (), draw(st.permutations([src, gate])), width[src])
        else:
            last = add("permute", (Arg(None, Num(0)), Arg(None, Num(2)), Arg(None, Num(3)), Arg(None, Num(1))),
                       [src], width[src], inner=True)
            normed = add("LN", (), [last], width[src], inner=True)
            linear = add("Linear", (Arg("out_channels", channels(width[src])),), [normed], width[src], inner=True)
            add("permute", (Arg(None, Num(0)), Arg(None, Num(3)), Arg(None, Num(1)), Arg(None, Num(2))),
                [linear], width[src])
    used = {i for ins in inputs for i in ins}
    ends = [i for i in range(len(nodes)) if i not in used]
    ends = [i if width[i] == 1 else conv(i, Fraction(1)) for i in ends]
    last = ends[0] if len(ends) == 1 else add("Add", (), ends, Fraction(1))
    nodes.append(("output", ()))
    inputs.append([last])
    output = len(nodes) - 1
    rank = [0, output] + list(range(1, output))
    new = {hidden: k for k, hidden in enumerate(rank)}
    block_nodes = tuple(Node(new[h], nodes[h][0], nodes[h][1]) for h in rank)
    edges = tuple(Edge((new[s],), new[h]) for h in range(len(nodes)) for s in inputs[h])
    return Block(name or draw(base_names), block_nodes, edges)
