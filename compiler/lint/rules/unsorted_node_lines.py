"""NAD405: node lines not sorted by id."""
from __future__ import annotations

from nader.compiler.lint.rule import Finding, rule
from nader.dsl.diagnostics import Label, Severity, define_code
from nader.dsl.span import Span

UNSORTED_NODE_LINES = define_code(
    "NAD405", "unsorted-node-lines", Severity.WARNING,
    "Node lines are not in increasing id order.", """
    ## What it does
    Flags the first node line whose id is smaller than the id of a node line above it
    (once per block). Named ids (`conv_1`) have no order and are skipped.
    ## Why is this bad?
    Node ids are how edges refer to nodes; with node lines sorted by id a reader finds node `7`
    where they expect it, and with ids in dataflow order (NAD404) the node list reads as the
    computation, top to bottom. Shuffled lines are typical of blocks edited by hand or merged from
    two versions, and hide mistakes such as a node that was meant to be replaced but is still there.
    ## Example
    ```
    0:input
    1:output
    3:BN
    2:Conv2d(out_channels=C,kernel_size=3)
    ```
    ## Fix
    Put node lines in id order; `nadc fmt --renumber --write` sorts them (and renumbers in
    dataflow order):
    ```
    0:input
    1:output
    2:Conv2d(out_channels=C,kernel_size=3)
    3:BN
    ```
""")


@rule(UNSORTED_NODE_LINES)
def check(block, ctx):
    highest = None
    for node in block.nodes:
        if not isinstance(node.id, int):  # named ids (`conv_1`) have no order
            continue
        if highest is not None and node.id < highest.id:
            yield Finding(Span.on_line(node.span.line, node.id_span),
                          f"node {node.id} is defined after node {highest.id}",
                          "sort node lines by id: `nadc fmt --renumber --write`",
                          (Label(Span.on_line(highest.span.line, highest.id_span), f"node {highest.id} is above"),))
            return
        if highest is None or node.id > highest.id:
            highest = node
