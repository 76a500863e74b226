"""NAD402: an activation feeding straight into another activation."""
from __future__ import annotations

from nader.compiler.lint.rule import Finding, consecutive_pairs, rule
from nader.dsl.diagnostics import Label, Severity, define_code
from nader.dsl.ops import Group, Op
from nader.dsl.span import Span

CONSECUTIVE_ACTIVATION = define_code(
    "NAD402", "consecutive-activation", Severity.WARNING,
    "An activation directly follows another activation.", """
    ## What it does
    Flags an edge from an activation (`ReLU`, `GELU`, `Sigmoid`) straight into another activation.
    ## Why is this bad?
    No such composition is useful: `ReLU(ReLU(x))` is `ReLU(x)` and `ReLU` of a `Sigmoid` is the
    `Sigmoid` (its outputs are positive), so the second node is dead weight; `Sigmoid(ReLU(x))` is
    never below 0.5, so a gate built that way can never close; `ReLU` after `GELU` is nearly `ReLU`.
    Two activations in a row usually mean a layer between them went missing, or a gate was wired to
    the wrong node.
    ## Example
    ```
    3:BN
    4:ReLU
    5:ReLU
    3->4
    4->5
    ```
    ## Fix
    Remove the redundant activation, or restore the layer meant between the two:
    ```
    3:BN
    4:ReLU
    3->4
    ```
""")


def _why(first: Op, second: Op) -> str:
    if first is second and first in (Op.RELU, Op.SIGMOID):
        return f"{first}({first}(x)) adds nothing" if first is Op.RELU else "the gate is squashed twice"
    if first is Op.SIGMOID and second is Op.RELU:
        return "ReLU of a Sigmoid output is the identity"
    if first is Op.RELU and second is Op.SIGMOID:
        return "a Sigmoid of a non-negative input never goes below 0.5"
    return "two activations in a row"


@rule(CONSECUTIVE_ACTIVATION)
def check(block, ctx):
    for s, t, first, second in consecutive_pairs(block, ctx, Group.ACTIVATION):
        a, b = first.op, second.op
        yield Finding(
            Span.on_line(second.span.line, second.op_span),
            f"`{second.op_name}` (node {t}) directly follows `{first.op_name}` (node {s}): {_why(a, b)}",
            "remove one of the two activations, or restore the layer meant between them",
            (Label(Span.on_line(first.span.line, first.op_span), "the first activation"),))
