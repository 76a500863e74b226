"""The diagnostic codes of shape inference (NAD3xx), with their documentation (`nadc explain`)."""
from __future__ import annotations

from nader.dsl.diagnostics import Severity, define_code

E, W = Severity.ERROR, Severity.WARNING

BROADCAST_MISMATCH = define_code("NAD301", "broadcast-mismatch", E, "Inputs of `Add`/`Mul` cannot be broadcast together.", """
    ## What it does
    Checks that the inputs of `Add` and `Mul` broadcast like PyTorch for all sizes: aligned from the
    right, each axis must be equal or the constant 1 on one side.
    ## Example
    ```
    2:Conv2d(out_channels=C/4,kernel_size=1)
    3:Add
    0->2
    2->3
    0->3
    ```
    Here `(B,C/4,H,W)` meets `(B,C,H,W)`.
    ## Fix
    Bring both inputs to the same shape, e.g. a 1x1 `Conv2d` back to `C` channels.
""")
CONCAT_MISMATCH = define_code("NAD302", "concat-mismatch", E, "Inputs of `concat` differ outside the concatenated axis.", """
    ## What it does
    Checks that `concat` inputs have the same rank and agree on every axis but `dim`.
    ## Fix
    Make the other axes equal (same stride, same permutation) or concatenate along the axis that differs.
""")
MATMUL_MISMATCH = define_code("NAD303", "matmul-mismatch", E, "The inputs of `multiply` do not fit a matrix product.", """
    ## What it does
    Checks `multiply` like `torch.matmul`: `(..., n, k) x (..., k, m)`, batch axes broadcasting.
    Operand order is the order of the edges in the file.
    ## Fix
    `permute` or `reshape` one operand so the inner sizes agree.
""")
MATMUL_SWAPPED = define_code("NAD304", "matmul-operands-swapped", W, "`multiply` only fits with its operands swapped.", """
    ## What it does
    Warns when `multiply`'s inputs fit a matrix product only in the opposite order of their edges.
    NADER accepted such blocks; the backends compute the product in the order that fits.
    ## Fix
    Swap the two edge lines into the `multiply` node so the file states the order that is computed.
""")
RESHAPE_COUNT = define_code("NAD305", "reshape-element-count", E, "`reshape` does not preserve the element count.", """
    ## What it does
    Checks that the target shape of `reshape` holds the same number of elements as its input for all
    sizes, with at most one `-1`, which must come out a whole size.
    ## Example
    ```
    3:reshape(B,C,H)
    ```
    ## Fix
    Multiply the sizes you merge (`reshape(B,C,H*W)`) or use `-1` for one of them.
""")
BAD_PERMUTE = define_code("NAD306", "invalid-permute", E, "`permute` is not a permutation of the input's axes.", """
    ## What it does
    Checks that `permute` names every axis of its input exactly once.
    ## Example
    ```
    3:permute(0,2,3)
    ```
    on a 4-d input.
    ## Fix
    List each axis once: `permute(0,2,3,1)` for channels-last.
""")
BAD_REPEAT = define_code("NAD307", "invalid-repeat", E, "`repeat` has too few sizes or a size below 1.", """
    ## What it does
    Checks that `repeat` gives at least one size per axis of its input, each a positive size.
    ## Fix
    Give one repeat count per axis, `1` for axes to keep.
""")
RANK_MISMATCH = define_code("NAD308", "rank-mismatch", E, "An operation receives a tensor of the wrong rank.", """
    ## What it does
    Checks the input rank of operations defined on images: `Conv2d`, the pooling operations and `BN`
    take `(B,C,H,W)`.
    ## Fix
    `permute` or `reshape` back to 4 axes before the operation.
""")
AXIS_OUT_OF_RANGE = define_code("NAD309", "axis-out-of-range", E, "An axis does not exist in the input.", """
    ## What it does
    Checks `dim` of `concat`, `mean`, `max`, `sum`, `softmax` and the axes of `permute` against the
    input's rank (negative axes count from the end), and that a tuple names each axis once.
    ## Fix
    Use an axis between `-rank` and `rank-1`.
""")
LAYER_SIZE_DEPENDS = define_code("NAD310", "layer-size-depends-on-input-size", E, "A layer's weight size would depend on the batch size (or, in `--domain any`, on H or W).", """
    ## What it does
    Checks the axis a layer learns over: `Linear` and `LN` act on the last axis, `Conv2d` and `BN` on
    axis 1. That axis must never depend on the batch size `B`. In `--domain any`, where one module
    must run at every `H` and `W`, it must not depend on `H` or `W` either; in the default domain
    that makes the layer resolution-bound instead (NAD317, a warning).
    ## Why is this bad?
    The weights are created once, for the batch size the network is built with. The last batch of
    an epoch is usually smaller, and evaluation may use another batch size: the layer then
    receives an axis of another size and the run crashes.
    ## Example
    ```
    2:reshape(1,B*C,H,W)
    3:BN
    0->2
    2->3
    ```
    `BN` learns over axis 1, here `B*C`.
    ## Fix
    Keep the batch on an axis of its own (`reshape(B,...)`), and learn over channels: `permute(0,2,3,1)`
    to channels-last before `Linear`/`LN`, and back with `permute(0,3,1,2)`.
""")
RESOLUTION_BOUND = define_code("NAD317", "resolution-bound-layer", W, "A layer learns over a spatial axis: the block is tied to its input resolution.", """
    ## What it does
    Warns when the axis a layer learns over (`Linear`/`LN`: the last axis; `Conv2d`/`BN`: axis 1)
    is a spatial size, such as `W` or `ceil(H/2)`, or `H*W` after a `reshape`.
    ## Why is this bad?
    It is valid: NADER builds each block for the resolution of its stage, and so do the network
    builder and the backends here, giving the layer the concrete size of its stage (an `LN` over
    `W` is `LayerNorm(32)` in the first NAS-Bench-201 stage, `LayerNorm(16)` in the second). But
    the weights then fit only that resolution: the same block cannot run at another input size,
    and blocks at different stages learn different parameter counts. `--domain any` rejects it.
    ## Example
    ```
    2:LN
    0->2
    ```
    on `(B,C,H,W)` normalises over `W`.
    ## Fix
    Nothing, if normalising over a spatial axis is meant. To learn over channels instead,
    `permute(0,2,3,1)` to channels-last before `Linear`/`LN`, and back with `permute(0,3,1,2)`.
""")
CONTRACT = define_code("NAD311", "role-contract", E, "The block's output shape does not fit its role.", """
    ## What it does
    Checks the output against the role: base `(B,C,H,W)`, stem `(B,dim,H/s,W/s)`, downsample
    `(B,dim,H/2,W/2)` with `dim = 2C`, cells `(B,dim,H,W)`, reduction cells `(B,dim,H/2,W/2)`.
    ## Fix
    Adjust the last layers' `out_channels` or strides; the message shows both shapes.
""")
UNSATISFIABLE = define_code("NAD312", "unsatisfiable-constraints", E, "No width satisfies the block's constraints.", """
    ## What it does
    Reports blocks whose divisibility and positivity constraints exclude every width.
    ## Fix
    Relax a constraint: e.g. `groups` that divides `C`, or sizes that stay positive.
""")
NETWORK_WIDTHS = define_code("NAD318", "network-widths", W, "The block's constraints exclude NAS-Bench-201's widths.", """
    ## What it does
    Warns when a valid block's constraints fail at a width NAS-Bench-201's network gives its role:
    a base block or cell runs at `C` = 16, 32 and 64 (on 32x32, 16x16, 8x8 maps), a downsample block
    at 16 -> 32 and 32 -> 64, a stem at 3 -> 16. NADER searches in that network.
    ## Why is this bad?
    The block is valid: the network builder here fits its widths to the constraints. NADER's
    network does not: `Linear(out_channels=C/32)` is half a channel at `C` = 16, `groups=32` does
    not divide 16 channels, and the block fails when NADER runs it.
    ## Example
    ```
    2:Conv2d(out_channels=C/32,kernel_size=1)
    ```
    needs `C % 32 == 0`.
    ## Fix
    Divide by what 16 is a multiple of (`C/16`, `C/4`), and choose `groups` that divide the channels
    at 16 (`groups=C`, depthwise). `nadc fix --unsafe` does (`fit-divisor`).
""")
SIZE_LIMIT = define_code("NAD313", "size-limit", E, "A tensor or layer is absurdly large at the reference size.", """
    ## What it does
    Evaluates every tensor and weight at the reference size (C=64, H=W=32, one sample) before
    anything is allocated, and rejects those past the limit (`--max-elements`).
    ## Why is this bad?
    Such blocks (channel counts in the millions, `repeat` explosions) exhaust memory when built.
    ## Fix
    Use channel multipliers like `C*4`, not `C*C`, and modest repeat counts.
""")
NON_POSITIVE = define_code("NAD314", "non-positive-size", E, "A size is zero or negative.", """
    ## What it does
    Reports channel counts, groups and shape entries that are never positive (`C-C`, `-4`).
    ## Fix
    Use a positive size expression.
""")
NOT_WHOLE = define_code("NAD315", "fractional-size", E, "A size is never a whole number.", """
    ## What it does
    Reports size expressions that cannot be integers for any width, such as `C/(2*C)`.
    ## Fix
    Divide by constants that the width can be a multiple of.
""")
GROUPS = define_code("NAD316", "groups-mismatch", E, "`groups` can never divide the channel counts.", """
    ## What it does
    Checks that `groups` divides both input and output channels of `Conv2d`. Where that holds only for
    some widths, it becomes a constraint; this error means it holds for none.
    ## Fix
    Use `groups=C` (depthwise), a small constant, or a divisor of the channel counts.
""")
