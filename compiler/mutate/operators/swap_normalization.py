"""swap-normalization: BatchNorm and channels-last LayerNorm exchanged."""
from __future__ import annotations

from typing import Optional

from nader.dsl.expr import TupleValue, constant_int
from nader.dsl.ir import Block, Node
from nader.dsl.ops import Op

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import replaced, rewrite

TO_LAST = (0, 2, 3, 1)
TO_FIRST = (0, 3, 1, 2)


def _axes(node: Node) -> Optional[tuple[int, ...]]:
    value = node.params.get("dims")
    if node.op is not Op.PERMUTE or not isinstance(value, TupleValue) or len(value.items) != 4:
        return None
    axes = [constant_int(v) for v in value.items]
    return None if None in axes else tuple(a % 4 for a in axes)  # type: ignore[operator]


class SwapNormalization(MutationOperator):
    name = "swap-normalization"
    draw_order = 80
    summary = "Replace a BN by a channels-last LayerNorm, or such a LayerNorm by a BN."
    arguments = ("node", "to")
    requires = "a BN, or an LN between permute(0,2,3,1) and permute(0,3,1,2)"
    doc = """
    ## What it does
    `BN` normalises each channel over the batch; `LN` normalises each position over its last
    axis, so on a `(B,C,H,W)` tensor it needs the channels moved last (ConvNeXt's LayerNorm):
    ```
    u -> BN -> ...     <->     u -> permute(0,2,3,1) -> LN -> permute(0,3,1,2) -> ...
    ```
    `to=LN` rewrites a `BN` node into the right-hand form (the `BN`'s id stays on the last
    `permute`); `to=BN` rewrites the right-hand form, where the two `permute`s serve only the
    `LN`, back into one `BN` (on the last `permute`'s id).
    ## Arguments
    `node`: the `BN` or the `LN`; `to`: `LN` or `BN`.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        out = []
        for node_id in facts.order:
            op = facts.nodes[node_id].op
            if op is Op.BN and facts.channels(node_id) is not None:
                out.append({"node": node_id, "to": "LN"})
            elif op is Op.LN and self._channels_last(facts, node_id) is not None:
                out.append({"node": node_id, "to": "BN"})
        return out

    @staticmethod
    def _channels_last(facts: BlockFacts, ln) -> Optional[tuple]:
        """(permute in, permute out) around `ln` when they serve only it, else None."""
        block = facts.block
        first, consumers = facts.single_input(ln), block.consumers_of(ln)
        if first is None or len(consumers) != 1 or block.consumers_of(first) != [ln]:
            return None
        last = consumers[0]
        if _axes(facts.nodes[first]) != TO_LAST or _axes(facts.nodes[last]) != TO_FIRST:
            return None
        source = facts.single_input(first)
        return (first, last) if source is not None and facts.channels(source) is not None else None

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id, to = args["node"], args["to"]
        op = facts.nodes[node_id].op
        if to == "LN" and op is Op.BN:
            u = facts.single_input(node_id)

            def channels_last(rw, node, inputs):  # permute, LN, and the BN's node permutes back
                normed = rw.add(Op.LN, [rw.add(Op.PERMUTE, [u], *TO_LAST)])
                return rw.keep(node, (normed,), replaced(node, Op.PERMUTE, *TO_FIRST))

            return rewrite(facts.block, {node_id: channels_last})
        if to == "BN" and op is Op.LN and (pair := self._channels_last(facts, node_id)) is not None:
            first, last = pair
            source = facts.single_input(first)
            # The permutes and the LN go (their consumers read the source); the last permute becomes BN.
            return rewrite(facts.block, {first: lambda rw, node, inputs: source,
                                         node_id: lambda rw, node, inputs: source,
                                         last: lambda rw, node, inputs: rw.keep(node, inputs, replaced(node, Op.BN))})
        raise CannotApply(f"cannot turn node {node_id} ({op}) into `{to}`")
