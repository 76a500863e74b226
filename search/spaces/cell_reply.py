"""GENIUS's reply in NAS-Bench-201's cell space, as its prompt lists the operations and as a grammar
for constrained decoding (`nadc grammar --reply cell`), both derived from the space's operations
and edges (`nb201.OPS`, `nb201.EDGES`); the grammar is written with the compiler's rule model
(`nader.compiler.grammar_export`). The reply itself is read by `nb201.parse_cell_reply`.
"""
from __future__ import annotations

from typing import Sequence

from nader.compiler import grammar_export as gx

from .nb201 import EDGES, OPS, as_cell

#: What each operation is, as GENIUS's prompt lists them by id (the paper's appendix C wording).
OP_TEXT = {
    "none": "Zeroize()  # outputs a tensor of zeros, effectively removing the connection",
    "skip_connect": "nn.Identity()",
    "nor_conv_1x1": "ReLUConvBN(channels, channels, kernel_size=1, stride=1, padding=0)  # same input and output channels",
    "nor_conv_3x3": "ReLUConvBN(channels, channels, kernel_size=3, stride=1, padding=1)  # same input and output channels",
    "avg_pool_3x3": "nn.AvgPool2d(kernel_size=3, stride=1, padding=1)  # does not change the spatial resolution",
}
REASON_WORDS, WORD_CHARS = 12, 16  # a cell reply's reasoning line: at most 12 words of at most 16 characters


def reply_rules(exclude: Sequence = ()) -> dict:
    """The grammar of a cell reply (`nadc grammar --reply cell`, what GENIUS sends where the profile
    names a grammar field): a reasoning line of at most REASON_WORDS words, then `op_list = [...]`
    with one id of OPS per edge; or the op_list line first, then at most that reasoning line (the
    prompt of a small model asks for the cell first). Ids and edges come from OPS and EDGES. Bounded
    (about 230 characters), so a model that does not stop still names a cell: Gemma 3 270M,
    unconstrained, ran every reply to `max_tokens` before naming one (issue 39). A reasoning word
    has no `[`, `]` or `=`, so the reasoning line is never an op_list line. `exclude` (cells)
    leaves their op_lists out: GENIUS asks for a cell not tried yet, and at temperature 0 Gemma 3
    270M named the same one again and again."""
    ops = [gx.Ref(gx.rule_name(f"cell-op-{op}")) for op in OPS]
    g = {gx.ROOT: gx.alt(gx.seq(gx.Ref("reason-line"), gx.Ref("op-list-line")),
                         gx.seq(gx.Ref("op-list-line"), gx.opt(gx.Ref("reason-line")))),
         "op-list-line": gx.seq("op_list = [", gx.Ref(_after(())), "]\n"),
         "cell-op": gx.alt(*ops),
         **{op.name: gx.Lit(str(i)) for i, op in enumerate(ops)},
         "reason-line": gx.seq(gx.Ref("reason-word"), gx.Rep(gx.upto(gx.seq(" ", gx.Ref("reason-word")),
                                                                     REASON_WORDS - 1), 0, 1), "\n"),
         "reason-word": gx.upto(gx.Ref("reason-char"), WORD_CHARS),
         "reason-char": gx.chars(" \t\r\n[]=", negated=True)}
    g.update(_id_rules(ops, {tuple(OPS.index(op) for op in as_cell(c).ops) for c in exclude}))
    return g


def _after(prefix: tuple) -> str:
    """The rule for the ids after `prefix` (ids already written) when some are excluded below it."""
    return "cell-ids" + "".join(f"-{gx.rule_name(str(i))}" for i in prefix)


def _id_rules(ops: list, excluded: set) -> dict:
    """The rules of the six ids: free after a prefix no excluded cell starts with (`cell-tail-N`: the
    N ids left), a trie of the excluded cells' prefixes otherwise, their last ids left out. A prefix
    all of whose continuations are left out is left out too: a rule with no alternative is no
    grammar (llama-cpp-python's server failed to parse one and died)."""
    n = len(EDGES)
    g = {f"cell-tail-{gx.rule_name(str(k))}": gx.seq(*sum(([", ", gx.Ref("cell-op")] for _ in range(k)), []))
         for k in range(1, n)}
    excluded = set(excluded)
    for k in range(n - 1, 0, -1):  # a prefix whose every continuation is left out is left out itself
        for prefix in {cell[:k] for cell in excluded if len(cell) == k + 1}:
            if all((*prefix, i) in excluded for i in range(len(ops))):
                excluded.add(prefix)
    if all((i,) in excluded for i in range(len(ops))):
        excluded = set()  # every cell tried: nothing left to ask for, so nothing is left out
    prefixes = {cell[:k] for cell in excluded for k in range(len(cell))} - excluded
    for prefix in sorted(prefixes, key=lambda p: (len(p), p)):
        items = []
        for i, op in enumerate(ops):
            here, left = (*prefix, i), n - len(prefix) - 1
            if here in excluded:
                continue
            tail = gx.Ref(_after(here)) if here in prefixes else \
                gx.Ref(f"cell-tail-{gx.rule_name(str(left))}") if left else None
            items.append(gx.seq(op, ", ", tail) if here in prefixes else gx.seq(op, tail) if tail else op)
        g[_after(prefix)] = gx.alt(*items)
    if () not in prefixes:
        g[_after(())] = gx.seq(gx.Ref("cell-op"), gx.Ref(f"cell-tail-{gx.rule_name(str(n - 1))}"))
    return g


def reply_grammar(fmt: str = "gbnf", exclude: Sequence = ()) -> str:
    """`reply_rules` in `fmt` (gbnf, lark or ebnf), as `nadc grammar --reply cell` prints it."""
    ids = ", ".join(f"{i} {op}" for i, op in enumerate(OPS))
    left = f"; {len(exclude)} tried cells left out" if exclude else ""
    return gx.render_rules(fmt, reply_rules(exclude), f"The form of a NAS-Bench-201 cell reply (`nadc grammar --reply "
                           f"cell`): a reasoning line of at most {REASON_WORDS} words, then `op_list = [...]` with "
                           f"{len(EDGES)} operation ids ({ids}); or the op_list line first{left}.")
