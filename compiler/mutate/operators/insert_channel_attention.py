"""insert-channel-attention: CBAM's channel attention after a node."""
from __future__ import annotations

from nader.dsl.ops import Op

from .insert_se import InsertSqueezeExcitation


class InsertChannelAttention(InsertSqueezeExcitation):
    name = "insert-channel-attention"
    draw_order = 20
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

    pools = (Op.ADAPTIVE_AVG_POOL2D, Op.ADAPTIVE_MAX_POOL2D)
