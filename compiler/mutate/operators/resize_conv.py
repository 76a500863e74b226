"""resize-conv: an inner Conv2d's output width set to C/2, C or 2C."""
from __future__ import annotations

from fractions import Fraction

from nader.compiler.passes.symbolic import Poly
from nader.dsl.ir import Block
from nader.dsl.ops import Group, Op

from ..base import BlockFacts, MutationOperator
from ..errors import CannotApply
from ..rewrite import rewrite, size_arg, with_args

WIDTHS = {"C/2": Fraction(1, 2), "C": Fraction(1), "2C": Fraction(2)}
#: Operations that take any channel count and pass it on unchanged. Of the normalisations only BN:
#: LN normalises the last axis, which a channels-last path may have made C.
_PASS_THROUGH = Group.ACTIVATION | Group.REGULARIZATION | Group.WINDOW_POOLING | {Op.BN}
_ONE = Poly.const(1)
_C = Poly.atom("C")


class ResizeConv(MutationOperator):
    name = "resize-conv"
    draw_order = 100
    summary = "Widen or narrow an inner Conv2d: its output channels become C/2, C or 2C."
    arguments = ("node", "width")
    requires = ("an inner Conv2d: every path from it passes only BN, activations, DropPath or pooling "
                "before reaching a Conv2d with groups=1")
    doc = """
    ## What it does
    Sets `out_channels` of the `Conv2d` `node` to `width` (C/2, C or 2C). Only *inner*
    convolutions qualify: whatever reads their output (through `BN`, `ReLU`, `GELU`, `Sigmoid`,
    `DropPath` or pooling, which adapt to any channel count) ends at a dense `Conv2d` (groups=1)
    that brings the tensor back to its own width. So the change stays inside the block and the
    block's output shape does not move.
    ```
    Conv2d(C) -> BN -> ReLU -> Conv2d(C)     becomes     Conv2d(2C) -> BN -> ReLU -> Conv2d(C)
    ```
    ## Arguments
    `node`: the convolution; `width`: `C/2`, `C` or `2C`.
    """

    def sites(self, facts: BlockFacts) -> list[dict]:
        out = []
        for node_id in facts.order:
            if facts.nodes[node_id].op is not Op.CONV2D or not self._inner(facts, node_id):
                continue
            current = facts.channels(node_id)
            out += [{"node": node_id, "width": name} for name, k in WIDTHS.items() if _C.scale(k) != current]
        return out

    @staticmethod
    def _inner(facts: BlockFacts, node_id) -> bool:
        if facts.groups(node_id) != _ONE:
            return False
        stack, seen = list(facts.block.consumers_of(node_id)), set()
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            op = facts.nodes[t].op
            if op is Op.CONV2D and facts.groups(t) == _ONE:
                continue
            if op not in _PASS_THROUGH:
                return False
            stack.extend(facts.block.consumers_of(t))
        return bool(seen)

    def rewrite(self, facts: BlockFacts, args: dict) -> Block:
        node_id, width = args["node"], args["width"]
        if facts.nodes[node_id].op is not Op.CONV2D or not self._inner(facts, node_id) or width not in WIDTHS:
            raise CannotApply(f"node {node_id} is not an inner Conv2d, or `{width}` is not one of C/2, C, 2C")
        resized = size_arg(_C.scale(WIDTHS[width]))
        return rewrite(facts.block, {node_id: lambda rw, node, inputs: rw.keep(node, inputs,
                                                                               with_args(node, out_channels=resized))})
