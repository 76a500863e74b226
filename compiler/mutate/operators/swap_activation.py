"""swap-activation: ReLU and GELU exchanged."""
from __future__ import annotations

from nader.dsl.ir import Block
from nader.dsl.ops import Op

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import Rewrite

#: Activations that may replace each other. Sigmoid is left alone: in blocks it is a gate.
ACTIVATIONS = (Op.RELU, Op.GELU)


class SwapActivation(MutationOperator):
    name = "swap-activation"
    summary = "Replace a ReLU by a GELU or a GELU by a ReLU."
    arguments = ("node", "to")
    requires = "a ReLU or GELU node"
    doc = """
    ## What it does
    Changes the operation of the activation `node` to `to`, keeping its id, edges and comment.
    Only `ReLU` and `GELU` are exchanged: a `Sigmoid` in a block is almost always a gate
    producing weights in (0,1), which another activation would break.
    ## Arguments
    `node`: the activation; `to`: `ReLU` or `GELU`.
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
        rw = Rewrite(facts.block)
        rw.replace(node_id, target)
        return rw.block()
