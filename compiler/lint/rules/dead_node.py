"""NAD206 in lint: nodes whose result never reaches `output` (the verifier's warning, selectable here)."""
from __future__ import annotations

from nader.compiler.lint.rule import Finding, rule
from nader.compiler.passes.structure import DEAD_NODE, dead_node_warnings


@rule(DEAD_NODE)
def check(block, ctx):
    # The verifier's own check, so `nadc verify` and `nadc lint` flag exactly the same nodes.
    for span, message, help_text, labels in dead_node_warnings(block):
        yield Finding(span, message, help_text, labels)
