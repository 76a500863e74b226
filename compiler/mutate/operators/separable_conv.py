"""separable-conv: a Conv2d replaced by a depthwise-separable pair."""
from __future__ import annotations

from nader.compiler.passes.symbolic import Poly
from nader.dsl.expr import constant_int
from nader.dsl.ir import Block
from nader.dsl.ops import Op

from ..base import BlockFacts, MutationOperator, kernel_is_one
from ..errors import CannotApply
from ..rewrite import replaced, rewrite, size_arg

_ONE = Poly.const(1)


class SeparableConv(MutationOperator):
    name = "separable-conv"
    draw_order = 60
    summary = "Replace a dense k x k Conv2d by a depthwise k x k Conv2d followed by a pointwise 1x1 Conv2d."
    arguments = ("node",)
    requires = "a Conv2d with groups=1 and a kernel larger than 1x1, on a (B,X,H,W) input"
    doc = """
    ## What it does
    Factorises the convolution `node` (MobileNet, Xception): a depthwise `Conv2d` with the same
    kernel, stride and dilation and `groups` equal to its input channels `Xin` (one filter per
    channel), then `node` itself becomes a pointwise `Conv2d(out_channels=..., kernel_size=1)`
    mixing channels. The shape is unchanged; weights drop from `k*k*Xin*X` to about `k*k*Xin + Xin*X`.
    ```
    u -> Conv2d(X,k,s) -> ...     becomes     u -> Conv2d(Xin,k,s,groups=Xin) -> Conv2d(X,1) -> ...
    ```
    ## Arguments
    `node`: the convolution to factorise.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        return [{"node": i} for i in facts.order if self._fits(facts, i)]

    @staticmethod
    def _fits(facts: BlockFacts, node_id) -> bool:
        node = facts.nodes[node_id]
        return (node.op is Op.CONV2D and not kernel_is_one(node) and facts.groups(node_id) == _ONE
                and facts.channels(facts.single_input(node_id)) is not None)

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id = args["node"]
        if not self._fits(facts, node_id):
            raise CannotApply(f"node {node_id} is not a dense Conv2d with a kernel larger than 1x1")
        node = facts.nodes[node_id]
        u = facts.single_input(node_id)
        cin = size_arg(facts.channels(u))
        p = node.params
        spatial = {k: p[k] for k in ("stride", "dilation") if constant_int(p[k]) != 1}

        def factorised(rw, node, inputs):  # a depthwise convolution, then this one made pointwise
            depthwise = rw.add(Op.CONV2D, [u], out_channels=cin, kernel_size=p["kernel_size"], **spatial, groups=cin)
            return rw.keep(node, (depthwise,), replaced(node, Op.CONV2D, out_channels=p["out_channels"], kernel_size=1))

        return rewrite(facts.block, {node_id: factorised})
