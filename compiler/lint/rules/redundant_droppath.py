"""NAD406: a DropPath whose probability is 0."""
from __future__ import annotations

from nader.compiler.lint.rule import Finding, rule
from nader.dsl.diagnostics import Severity, define_code
from nader.dsl.expr import constant_number
from nader.dsl.ops import Op

REDUNDANT_DROPPATH = define_code(
    "NAD406", "redundant-droppath", Severity.WARNING,
    "`DropPath` with `prob=0` (written or by default) does nothing.", """
    ## What it does
    Flags `DropPath` nodes whose drop probability is 0, whether written (`DropPath(prob=0)`) or
    left to the default (`DropPath`).
    ## Why is this bad?
    With `prob=0`, DropPath never drops a sample and scales by 1: it is the identity in training
    and in evaluation (the backends lower it to nothing). The node suggests regularization that
    does not happen, which misleads whoever reads the block or compares runs, and adds a module to
    every generated network.
    ## Example
    ```
    5:BN
    6:DropPath
    5->6
    ```
    ## Fix
    Set the probability you meant (NADER's DARTS blocks use 0.2 or 0.3), or remove the node:
    ```
    5:BN
    6:DropPath(prob=0.2)
    5->6
    ```
""")


@rule(REDUNDANT_DROPPATH)
def check(block, ctx):
    for node in block.nodes:
        if node.op is not Op.DROP_PATH:
            continue
        value = node.params.get("prob")
        if value is None or constant_number(value) != 0:
            continue
        written = node.arg("prob") is not None
        message = (f"`DropPath(prob={value})` (node {node.id}) never drops anything" if written else
                   f"`DropPath` (node {node.id}) has the default `prob=0` and never drops anything")
        yield Finding(node.arg_span("prob"), message,
                      "set `prob` to the drop probability you meant, or remove the node")
