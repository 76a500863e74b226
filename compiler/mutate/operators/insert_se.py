"""insert-se: a squeeze-and-excitation gate after a node."""
from __future__ import annotations

from fractions import Fraction

from nader.dsl.ir import Block
from nader.dsl.ops import Group, Op

from ..base import BlockFacts, MutationOperator
from ..rewrite import rewrite, size_arg


class InsertSqueezeExcitation(MutationOperator):
    name = "insert-se"
    draw_order = 10
    summary = "Insert a squeeze-and-excitation gate (Hu et al. 2018) after a node."
    arguments = ("node", "reduction")
    requires = "a node with a (B,X,H,W) output whose channel count X is a multiple of C"
    doc = """
    ## What it does
    Gates the output `x` of `node` channel by channel: the squeeze averages each channel
    (`AdaptiveAvgPool2d(1)`), two 1x1 convolutions with a `ReLU` between them form the
    excitation (hidden width `X/reduction`), a `Sigmoid` turns it into weights in (0,1), and
    `Mul` rescales `x`. Every former consumer of `x` reads the gated tensor instead.
    ```
    x -> AdaptiveAvgPool2d(1) -> Conv2d(X/4,1) -> ReLU -> Conv2d(X,1) -> Sigmoid -> Mul(x, .)
    ```
    ## Arguments
    `node`: the node whose output is gated. `reduction`: 4, so the hidden width `X/4` makes
    `X % 4 == 0` a constraint of the block.
    """

    reduction = 4
    pools = (Op.ADAPTIVE_AVG_POOL2D,)  # the channel descriptors the gate sees

    def sites(self, facts: BlockFacts) -> list[dict]:
        return [{"node": i, "reduction": self.reduction} for i in facts.order
                if facts.nodes[i].op not in Group.SINK and facts.channels(i) is not None]

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        x = args["node"]
        width = facts.channels(x)
        hidden = size_arg(width.scale(Fraction(1, int(args["reduction"]))))

        def gated(rw, node, inputs):  # its consumers read the gated tensor
            rw.keep(node, inputs)
            descriptors = []
            for pool in self.pools:  # squeeze, then the excitation MLP X -> X/r -> X
                pooled = rw.add(pool, [x], output_size=1)
                squeeze = rw.add(Op.CONV2D, [pooled], out_channels=hidden, kernel_size=1)
                act = rw.add(Op.RELU, [squeeze])
                descriptors.append(rw.add(Op.CONV2D, [act], out_channels=size_arg(width), kernel_size=1))
            merged = descriptors[0] if len(descriptors) == 1 else rw.add(Op.ADD, descriptors)
            gate = rw.add(Op.SIGMOID, [merged])
            return rw.add(Op.MUL, [x, gate])

        return rewrite(facts.block, {x: gated})
