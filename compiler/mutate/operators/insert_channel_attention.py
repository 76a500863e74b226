"""insert-channel-attention: CBAM's channel attention after a node."""
from __future__ import annotations

from fractions import Fraction

from nader.dsl.ir import Block
from nader.dsl.ops import Group, Op

from ..base import BlockFacts, MutationOperator
from ..rewrite import Rewrite, size_arg


class InsertChannelAttention(MutationOperator):
    name = "insert-channel-attention"
    summary = "Insert CBAM's channel attention (Woo et al. 2018) after a node: average and max descriptors."
    arguments = ("node", "reduction")
    requires = "a node with a (B,X,H,W) output whose channel count X is a multiple of C"
    doc = """
    ## What it does
    Like `insert-se`, but the gate sees two descriptors of each channel of `x`, its average
    (`AdaptiveAvgPool2d(1)`) and its maximum (`AdaptiveMaxPool2d(1)`). Each goes through a
    1x1-convolution MLP (`X -> X/4 -> X`, `ReLU` between); the two are added, a `Sigmoid` makes
    the weights and `Mul` rescales `x`. Every former consumer of `x` reads the result.
    CBAM shares one MLP between the two descriptors; the block language has no weight sharing,
    so each descriptor gets its own.
    ```
    x -> AdaptiveAvgPool2d(1) -> Conv2d(X/4,1) -> ReLU -> Conv2d(X,1) -+
    x -> AdaptiveMaxPool2d(1) -> Conv2d(X/4,1) -> ReLU -> Conv2d(X,1) -+-> Add -> Sigmoid -> Mul(x, .)
    ```
    ## Arguments
    `node`: the node whose output is gated. `reduction`: 4 (`X % 4 == 0` becomes a constraint).
    """

    reduction = 4

    def sites(self, facts: BlockFacts) -> list[dict]:
        return [{"node": i, "reduction": self.reduction} for i in facts.order
                if facts.nodes[i].op not in Group.SINK and facts.channels(i) is not None]

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        x = args["node"]
        width = facts.channels(x)
        hidden = size_arg(width.scale(Fraction(1, int(args["reduction"]))))
        rw = Rewrite(facts.block)
        consumers = rw.consumers_of(x)
        descriptors = []
        for pool in (Op.ADAPTIVE_AVG_POOL2D, Op.ADAPTIVE_MAX_POOL2D):
            pooled = rw.add(pool, [x], output_size=1)
            squeeze = rw.add(Op.CONV2D, [pooled], out_channels=hidden, kernel_size=1)
            act = rw.add(Op.RELU, [squeeze])
            descriptors.append(rw.add(Op.CONV2D, [act], out_channels=size_arg(width), kernel_size=1))
        gate = rw.add(Op.SIGMOID, [rw.add(Op.ADD, descriptors)])
        gated = rw.add(Op.MUL, [x, gate])
        rw.redirect(x, gated, consumers)
        return rw.block()
