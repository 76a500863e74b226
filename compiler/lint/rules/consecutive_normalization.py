"""NAD401: a normalization feeding straight into another normalization."""
from __future__ import annotations

from nader.compiler.lint.rule import Finding, consecutive_pairs, rule
from nader.dsl.diagnostics import Label, Severity, define_code
from nader.dsl.ops import Group
from nader.dsl.span import Span

CONSECUTIVE_NORMALIZATION = define_code(
    "NAD401", "consecutive-normalization", Severity.WARNING,
    "A normalization directly follows another normalization.", """
    ## What it does
    Flags an edge from a normalization (`BN`, `LN`) straight into another normalization.
    ## Why is this bad?
    The second normalization receives an already normalized tensor: `BN` after `BN` re-estimates
    statistics that are already zero-mean and unit-variance per channel and only adds parameters,
    running statistics and a kernel launch; mixed pairs normalize the same values over different
    axes, which is rarely intended. It is usually a copy-and-paste slip, or a missing layer
    (a convolution or activation) between the two.
    ## Example
    ```
    2:Conv2d(out_channels=C,kernel_size=3)
    3:BN
    4:BN
    2->3
    3->4
    ```
    ## Fix
    Remove one of the two, or put the layer that was meant to be between them back:
    ```
    2:Conv2d(out_channels=C,kernel_size=3)
    3:BN
    2->3
    ```
""")


@rule(CONSECUTIVE_NORMALIZATION)
def check(block, ctx):
    for s, t, first, second in consecutive_pairs(block, ctx, Group.NORMALIZATION):
        yield Finding(
            Span.on_line(second.span.line, second.op_span),
            f"`{second.op_name}` (node {t}) directly follows `{first.op_name}` (node {s})",
            "remove one of the two normalizations, or restore the layer meant between them",
            (Label(Span.on_line(first.span.line, first.op_span), "the first normalization"),))
