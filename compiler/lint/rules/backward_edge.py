"""NAD404: an edge from a higher node id to a lower one."""
from __future__ import annotations

from nader.compiler.lint.rule import Finding, rule
from nader.dsl.diagnostics import Label, Severity, define_code
from nader.dsl.ops import Group
from nader.dsl.span import Span

BACKWARD_EDGE = define_code(
    "NAD404", "backward-edge", Severity.WARNING,
    "An edge goes from a higher node id to a lower one.", """
    ## What it does
    Flags an edge `a->b` between two operation nodes where `a > b`: the ids are not in dataflow
    (topological) order; only integer ids are compared, named ids (`conv_1`) have no order.
    Edges from input terminals and into `output` are exempt, since the
    convention numbers the terminals first (`0:input`, `1:output`). Blocks with a cycle are left
    to `nadc verify` (NAD203).
    ## Why is this bad?
    Blocks are read top to bottom, by people and by the LLMs that learn from them. When ids follow
    the dataflow, each node's inputs are defined above it and a block reads like a program; a
    backward edge makes the reader search for where a value comes from. Most of NADER's own blocks
    are numbered this way (its ResNet blocks number the final `ReLU` before the `Add` feeding it),
    and dumps and diffs by id are easiest to follow when blocks share the convention.
    ## Example
    ```
    2:BN
    3:Conv2d(out_channels=C,kernel_size=3)
    0->3
    3->2
    2->1
    ```
    ## Fix
    Renumber so that every edge goes from a lower id to a higher one; `nadc fmt --renumber --write`
    does it without changing the block's meaning:
    ```
    2:Conv2d(out_channels=C,kernel_size=3)
    3:BN
    0->2
    2->3
    3->1
    ```
""")


def _backward(source, target) -> bool:
    """Only integer ids have an order; named ids (`conv_1`) are never backward."""
    return isinstance(source, int) and isinstance(target, int) and source > target


@rule(BACKWARD_EDGE)
def check(block, ctx):
    if block.topological_order() is None:
        return
    for edge in block.edges:
        target = ctx.nodes.get(edge.target)
        if target is None or target.op in Group.TERMINAL:
            continue
        for index, s in enumerate(edge.sources):
            source = ctx.nodes.get(s)
            if source is None or source.op in Group.TERMINAL or not _backward(s, edge.target):
                continue
            yield Finding(edge.source_span(index),
                          f"edge `{s}->{edge.target}` goes from a later node to an earlier one",
                          "number nodes in dataflow order: `nadc fmt --renumber --write`",
                          (Label(Span.on_line(source.span.line, source.id_span), f"node {s} is defined here"),))
            break  # one finding per edge line
