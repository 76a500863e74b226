"""NAD403: a Sigmoid whose output never multiplies anything."""
from __future__ import annotations

from nader.compiler.lint.rule import Finding, rule
from nader.dsl.diagnostics import Severity, define_code
from nader.dsl.ops import Group, Op
from nader.dsl.span import Span

UNGATED_SIGMOID = define_code(
    "NAD403", "sigmoid-without-gate", Severity.WARNING,
    "A `Sigmoid`'s output never reaches a `Mul` or `multiply`.", """
    ## What it does
    Follows the output of each `Sigmoid` through operations that only move or copy values
    (`reshape`, `permute`, `repeat`, `concat`) and through `DropPath`, and flags the `Sigmoid` when
    that never leads to a `Mul` or `multiply`.
    ## Why is this bad?
    In this language `Sigmoid` is the gate of attention blocks: squeeze-and-excitation, spatial and
    channel attention all compute `x * sigmoid(f(x))`. A `Sigmoid` whose values are added,
    convolved or returned instead of multiplied is almost always a gate whose `Mul` was forgotten
    or wired to the wrong node; the block then outputs `sigmoid(f(x))`, values squashed into (0, 1).
    As a hidden activation, `Sigmoid` saturates (its gradient is at most 0.25) and slows training
    of deep stacks; `ReLU` or `GELU` is the usual choice there.
    ## Example
    ```
    5:Linear(out_channels=C)
    6:Sigmoid
    7:reshape(B,C,1,1)
    8:Add
    5->6
    6->7
    0,7->8
    ```
    ## Fix
    Multiply the input by the gate:
    ```
    8:Mul
    0,7->8
    ```
    or, if an activation was meant, use `ReLU` or `GELU`.
""")

_GATES = Group.GATE_CONSUMER
#: Operations a gate's values pass through unchanged in kind: layout moves and DropPath.
_PASS_THROUGH = Group.LAYOUT | Group.REGULARIZATION


@rule(UNGATED_SIGMOID)
def check(block, ctx):
    for node in ctx.nodes.values():
        if node.op is not Op.SIGMOID:
            continue
        seen, todo, gated = {node.id}, list(ctx.consumers(node.id)), False
        while todo and not gated:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            op = ctx.op(current)
            if op in _GATES:
                gated = True
            elif op in _PASS_THROUGH:
                todo.extend(ctx.consumers(current))
        if not gated and ctx.consumers(node.id):  # an unused Sigmoid is verify's NAD206
            yield Finding(Span.on_line(node.span.line, node.op_span),
                          f"the output of `Sigmoid` (node {node.id}) never reaches a `Mul` or `multiply`",
                          "multiply the gated tensor by it (`Mul`), or use `ReLU`/`GELU` as an activation")
