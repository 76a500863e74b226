"""insert-bottleneck: a 1x1 Conv2d reducing the channels in front of a larger convolution."""
from __future__ import annotations

from fractions import Fraction

from nader.compiler.passes.symbolic import Poly
from nader.dsl.ir import Block
from nader.dsl.ops import Op

from ..base import BlockFacts, MutationOperator, kernel_is_one
from ..errors import CannotApply
from ..rewrite import rewrite, size_arg

RATIOS = (2, 4)
_ONE = Poly.const(1)


class InsertBottleneck(MutationOperator):
    name = "insert-bottleneck"
    draw_order = 90
    summary = "Insert a 1x1 Conv2d-BN-ReLU before a k x k Conv2d, reducing its input channels."
    arguments = ("node", "ratio")
    requires = "a Conv2d with groups=1 and a kernel larger than 1x1, on a (B,X,H,W) input"
    doc = """
    ## What it does
    The convolution `node` reads `u` with `Xin` channels; a 1x1 `Conv2d` to `Xin/ratio`
    channels, `BN` and `ReLU` now come between them (the reduce step of ResNet's bottleneck),
    so the expensive k x k convolution sees fewer channels. Its output is unchanged.
    ```
    u -> Conv2d(X,k)     becomes     u -> Conv2d(Xin/ratio,1) -> BN -> ReLU -> Conv2d(X,k)
    ```
    ## Arguments
    `node`: the convolution; `ratio`: 2 or 4 (`Xin % ratio == 0` becomes a constraint).
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        return [{"node": i, "ratio": r} for i in facts.order if self._fits(facts, i) for r in RATIOS]

    @staticmethod
    def _fits(facts: BlockFacts, node_id) -> bool:
        node = facts.nodes[node_id]
        return (node.op is Op.CONV2D and not kernel_is_one(node) and facts.groups(node_id) == _ONE
                and facts.channels(facts.single_input(node_id)) is not None)

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id, ratio = args["node"], args["ratio"]
        if not self._fits(facts, node_id) or ratio not in RATIOS:
            raise CannotApply(f"no bottleneck with ratio {ratio!r} fits before node {node_id}")
        u = facts.single_input(node_id)
        reduced = size_arg(facts.channels(u).scale(Fraction(1, ratio)))

        def squeezed(rw, node, inputs):  # the convolution reads the reduced tensor
            reduce = rw.add(Op.CONV2D, [u], out_channels=reduced, kernel_size=1)
            act = rw.add(Op.RELU, [rw.add(Op.BN, [reduce])])
            return rw.keep(node, (act,))

        return rewrite(facts.block, {node_id: squeezed})
