"""swap-activation: one hidden-unit activation (ReLU, GELU, ...) exchanged for another.

The activations come from the registry's `Group.HIDDEN_ACTIVATION`, so a newly registered one
is swapped in and out without an edit here."""
from __future__ import annotations

from nader.dsl.ir import Block
from nader.dsl.ops import Group, in_order

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import replaced, rewrite

#: Activations that may replace each other. Gates (Sigmoid) are left alone.
ACTIVATIONS = in_order(Group.HIDDEN_ACTIVATION)
_NAMES = " or ".join(f"`{op.value}`" for op in ACTIVATIONS)
_GATES = ", ".join(f"`{op.value}`" for op in in_order(Group.ACTIVATION & Group.GATE))


class SwapActivation(MutationOperator):
    name = "swap-activation"
    draw_order = 70
    summary = f"Replace an activation by another ({_NAMES.replace('`', '')})."
    arguments = ("node", "to")
    requires = f"a {_NAMES.replace('`', '')} node"
    doc = f"""
    ## What it does
    Changes the operation of the activation `node` to `to`, keeping its id, edges and comment.
    Only the hidden-unit activations ({_NAMES.replace(' or ', ', ')}) are exchanged: a {_GATES}
    in a block is almost always a gate producing weights in (0,1), which another activation
    would break.
    ## Arguments
    `node`: the activation; `to`: {_NAMES}.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        return [{"node": i, "to": other.value} for i in facts.order if facts.nodes[i].op in ACTIVATIONS
                for other in ACTIVATIONS if other is not facts.nodes[i].op]

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id, to = args["node"], args["to"]
        current = facts.nodes[node_id].op
        target = next((op for op in ACTIVATIONS if op.value == to), None)
        if current not in ACTIVATIONS or target is None or target is current:
            raise CannotApply(f"cannot turn node {node_id} ({current}) into `{to}`")
        return rewrite(facts.block, {node_id: lambda rw, node, inputs: rw.keep(node, inputs, replaced(node, target))})
