"""One ONNX lowering per operation (`LOWERINGS`, keyed by `Op`), and the operators each becomes (`ONNX_OPS`).

A lowering receives the names of its input tensors, in edge order, and returns the name of
its output tensor. "Same" padding is expressed exactly with static asymmetric `pads`
(`same_pads`), right for every `H` whatever `H mod stride`. A test fails when an operation
of `Group.COMPUTE` lacks a lowering.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from onnx import TensorProto, helper

from nader.compiler.backends.onnx.context import BlockContext
from nader.compiler.backends.onnx.graph import TORCH_NORM_EPS, OnnxLoweringError, bn_node, conv_node, linear_node
from nader.dsl.expr import TupleValue, Value, constant_int
from nader.dsl.ir import Node
from nader.dsl.ops import Op


def same_pads(kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """ONNX (begin, end) padding of one spatial axis equal to the "same" padding of the semantics.

    The semantics pads `p = k'//2` on both sides (`k' = dilation*(kernel-1)+1`) and crops the
    result to `ceil(H/stride)`. Cropping only removes trailing outputs, so it equals a smaller end
    padding: with `end = p` for odd `k'` and `end = p-1` for even `k'`, ONNX's output size
    `floor((H + p + end - k')/stride) + 1` is `floor((H-1)/stride) + 1 = ceil(H/stride)` for every
    `H >= 1`, and every remaining output reads the same window: output `i` starts at row
    `i*stride - p` in both, and its last row `(ceil(H/s)-1)*s + p - 1 + (k' odd)` never passes the
    end of the padded input. So the pads are static and exact for all `H`, whatever `H mod stride`.
    """
    effective = dilation * (kernel - 1) + 1
    begin = effective // 2
    end = begin if effective % 2 else begin - 1
    return begin, end


def _pair(value: Value) -> tuple[int, int]:
    if isinstance(value, TupleValue):
        items = [constant_int(i) for i in value.items]
        if len(items) == 1:
            items = items * 2
    else:
        items = [constant_int(value)] * 2
    if len(items) != 2 or any(i is None for i in items):
        raise OnnxLoweringError(f"expected an integer or a pair of integers, got `{value}`")
    return items[0], items[1]  # type: ignore[return-value]


def _axes_param(value: Value) -> list[int]:
    items = value.items if isinstance(value, TupleValue) else (value,)
    axes = [constant_int(i) for i in items]
    if any(a is None for a in axes):
        raise OnnxLoweringError(f"axes must be integers, got `{value}`")
    return axes  # type: ignore[return-value]


# -- lowerings, one per operation -----------------------------------------------------------

def _lower_conv(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    layer = ctx.layer(node)
    (kh, kw), (sh, sw) = _pair(node.params["kernel_size"]), _pair(node.params["stride"])
    dh, dw = _pair(node.params["dilation"])
    (top, bottom), (left, right) = same_pads(kh, sh, dh), same_pads(kw, sw, dw)
    kernel = tuple(layer.require("weight").shape[2:])
    if kernel != (kh, kw):
        raise OnnxLoweringError(f"node {node.id}: the module's kernel {kernel} is not ({kh},{kw})")
    return conv_node(ctx.g, layer, xs[0], base, pads=[top, left, bottom, right], strides=[sh, sw], dilations=[dh, dw],
                     groups=_groups(ctx, node))


def _groups(ctx: BlockContext, node: Node) -> int:
    """The convolution's groups at the block's widths (the verifier keeps it a width expression)."""
    groups = ctx.shapes.facts.get(node.id, {}).get("groups")
    if groups is None:
        return 1
    try:
        value = groups.evaluate(ctx.sizes)
    except KeyError:
        raise OnnxLoweringError(f"node {node.id}: its groups `{groups}` depend on more than the widths") from None
    return int(value)


def _lower_pool(op_type: str) -> Callable:
    def lower(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
        (kh, kw), (sh, sw) = _pair(node.params["kernel_size"]), _pair(node.params["stride"])
        (top, bottom), (left, right) = same_pads(kh, sh), same_pads(kw, sw)
        attrs = dict(kernel_shape=[kh, kw], strides=[sh, sw], pads=[top, left, bottom, right])
        if op_type == "AveragePool":
            attrs["count_include_pad"] = 0  # the semantics exclude the padding from the count
        # MaxPool ignores padded positions, which equals padding with -inf.
        return ctx.g.add(op_type, [xs[0]], base, **attrs)
    return lower


def _lower_adaptive(op_type: str) -> Callable:
    """Adaptive pooling to (oh, ow) for any input size: global pooling for 1x1, else per-bin slices.

    Bin `i` of an axis of size `n` covers `[floor(i*n/o), ceil((i+1)*n/o))`, as in PyTorch. Average
    and maximum over a rectangle are separable, so each axis is pooled on its own: `o` dynamic
    `Slice`s, one `ReduceMean`/`ReduceMax` each, and a `Concat`.
    """
    global_op = "GlobalAveragePool" if op_type == "ReduceMean" else "GlobalMaxPool"

    def lower(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
        oh, ow = _pair(node.params["output_size"])
        g = ctx.g
        if oh == 1 and ow == 1:
            return g.add(global_op, [xs[0]], base)
        x = xs[0]
        for axis, bins in ((2, oh), (3, ow)):
            if bins == 1:
                x = g.reduce(op_type, x, [axis], f"{base}_axis{axis}")
                continue
            n = g.add("Shape", [x], f"{base}_n{axis}", start=axis, end=axis + 1)
            pieces = []
            for i in range(bins):
                start = g.add("Div", [g.add("Mul", [n, g.const([i])], f"{base}_s"), g.const([bins])], f"{base}_start")
                end = g.add("Div", [g.add("Add", [g.add("Mul", [n, g.const([i + 1])], f"{base}_e"),
                                                  g.const([bins - 1])], f"{base}_e"), g.const([bins])], f"{base}_end")
                piece = g.add("Slice", [x, start, end, g.const([axis], "axes")], f"{base}_bin{axis}_{i}")
                pieces.append(g.reduce(op_type, piece, [axis], f"{base}_bin{axis}_{i}_pool"))
            x = g.add("Concat", pieces, f"{base}_axis{axis}", axis=axis)
        return g.add("Identity", [x], base)
    return lower


def _lower_linear(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    layer = ctx.layer(node)
    g = ctx.g
    if ctx.input_rank(node) == 2:
        return linear_node(g, layer, xs[0], base)
    weight, bias = layer.require("weight"), layer.get("bias")  # weight: (out, in)
    y = g.add("MatMul", [xs[0], g.weight(np.ascontiguousarray(weight.T), f"{base}.weight_t")],
              base if bias is None else f"{base}_matmul")
    if bias is None:
        return y
    return g.add("Add", [y, g.weight(bias, f"{base}.bias")], base)


def _lower_bn(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    return bn_node(ctx.g, ctx.layer(node), xs[0], base)


def _lower_ln(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    ln = ctx.layer(node)
    weight = ln.require("weight")  # the PyTorch backend's LN is affine
    if weight.ndim != 1:
        raise OnnxLoweringError(f"node {node.id}: LN must normalise the last axis only, not {weight.shape}")
    g = ctx.g
    inputs = [xs[0], g.weight(weight, f"{base}.weight")]
    bias = ln.get("bias")
    if bias is not None:
        inputs.append(g.weight(bias, f"{base}.bias"))
    return g.add("LayerNormalization", inputs, base, axis=-1, epsilon=TORCH_NORM_EPS)


def _lower_unary(op_type: str) -> Callable:
    def lower(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
        return ctx.g.add(op_type, [xs[0]], base)
    return lower


def _lower_gelu(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    g = ctx.g
    if g.opset >= 20:
        return g.add("Gelu", [xs[0]], base, approximate="none")
    # The exact form 0.5 * x * (1 + erf(x / sqrt(2))), as PyTorch computes GELU.
    scaled = g.add("Div", [xs[0], g.scalar_f32(math.sqrt(2.0), "sqrt2")], f"{base}_scaled")
    erf = g.add("Erf", [scaled], f"{base}_erf")
    one_plus = g.add("Add", [erf, g.scalar_f32(1.0, "one")], f"{base}_1p")
    half_x = g.add("Mul", [xs[0], g.scalar_f32(0.5, "half")], f"{base}_halfx")
    return g.add("Mul", [half_x, one_plus], base)


def _lower_add(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    if len(xs) == 2:
        return ctx.g.add("Add", xs, base)
    return ctx.g.add("Sum", xs, base)  # n-ary, broadcasting


def _lower_mul(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    y = xs[0]
    for k, x in enumerate(xs[1:], 1):
        y = ctx.g.add("Mul", [y, x], base if k == len(xs) - 1 else f"{base}_{k}")
    return y


def _lower_matmul(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    a, b = xs
    if ctx.shapes.facts.get(node.id, {}).get("swapped"):
        a, b = b, a  # only the reverse order fits (NAD304); the backends compute matmul(b, a)
    return ctx.g.add("MatMul", [a, b], base)


def _lower_concat(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    rank = ctx.input_rank(node)
    axis = constant_int(node.params["dim"])
    return ctx.g.add("Concat", xs, base, axis=axis % rank)  # type: ignore[operator]


def _lower_reduce(op_type: str) -> Callable:
    def lower(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
        rank = ctx.input_rank(node)
        axes = sorted(a % rank for a in _axes_param(node.params["dim"]))
        return ctx.g.reduce(op_type, xs[0], axes, base, keepdims=1)
    return lower


def _lower_softmax(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    rank = ctx.input_rank(node)
    axis = constant_int(node.params["dim"])
    return ctx.g.add("Softmax", [xs[0]], base, axis=axis % max(rank, 1))  # type: ignore[operator]


def _lower_permute(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    rank = ctx.input_rank(node)
    perm = [d % rank for d in _axes_param(node.params["dims"])]
    return ctx.g.add("Transpose", [xs[0]], base, perm=perm)


def _lower_repeat(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    items = node.params["sizes"].items  # type: ignore[union-attr]
    rank = ctx.input_rank(node)
    x = xs[0]
    if len(items) > rank:  # Tensor.repeat adds leading axes of size 1 first
        x = ctx.g.unsqueeze(x, list(range(len(items) - rank)), f"{base}_expand")
    return ctx.g.add("Tile", [x, ctx.shape_tensor(items)], base)


def _lower_reshape(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    items = node.params["shape"].items  # type: ignore[union-attr]
    # Sizes are positive or -1 (the verifier checks), so Reshape's special 0 never occurs.
    return ctx.g.add("Reshape", [xs[0], ctx.shape_tensor(items)], base)


def _lower_identity(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    return ctx.g.add("Identity", [xs[0]], base)  # DropPath is the identity in evaluation


def _lower_zero(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    # ConstantOfShape(Shape(x)) gives 0 even where x is inf or NaN (x * 0 would not)
    zero = helper.make_tensor(f"{base}_value", TensorProto.FLOAT, [1], [0.0])
    return ctx.g.add("ConstantOfShape", [ctx.g.add("Shape", [xs[0]], f"{base}_shape")], base, value=zero)


LOWERINGS: dict[Op, Callable[[BlockContext, Node, list[str], str], str]] = {
    Op.CONV2D: _lower_conv,
    Op.LINEAR: _lower_linear,
    Op.AVG_POOL2D: _lower_pool("AveragePool"),
    Op.MAX_POOL2D: _lower_pool("MaxPool"),
    Op.ADAPTIVE_AVG_POOL2D: _lower_adaptive("ReduceMean"),
    Op.ADAPTIVE_MAX_POOL2D: _lower_adaptive("ReduceMax"),
    Op.RELU: _lower_unary("Relu"),
    Op.GELU: _lower_gelu,
    Op.SIGMOID: _lower_unary("Sigmoid"),
    Op.BN: _lower_bn,
    Op.LN: _lower_ln,
    Op.ADD: _lower_add,
    Op.MUL: _lower_mul,
    Op.MATMUL: _lower_matmul,
    Op.CONCAT: _lower_concat,
    Op.MEAN: _lower_reduce("ReduceMean"),
    Op.MAX: _lower_reduce("ReduceMax"),
    Op.SUM: _lower_reduce("ReduceSum"),
    Op.SOFTMAX: _lower_softmax,
    Op.PERMUTE: _lower_permute,
    Op.REPEAT: _lower_repeat,
    Op.RESHAPE: _lower_reshape,
    Op.DROP_PATH: _lower_identity,
    Op.ZERO: _lower_zero,
}

# The ONNX operators each operation becomes (documentation and drawings; docs/backends.md).
ONNX_OPS: dict[Op, str] = {
    Op.CONV2D: "Conv (asymmetric pads)",
    Op.LINEAR: "Gemm (2-d) / MatMul + Add",
    Op.AVG_POOL2D: "AveragePool (count_include_pad=0)",
    Op.MAX_POOL2D: "MaxPool",
    Op.ADAPTIVE_AVG_POOL2D: "GlobalAveragePool / Slice + ReduceMean + Concat",
    Op.ADAPTIVE_MAX_POOL2D: "GlobalMaxPool / Slice + ReduceMax + Concat",
    Op.RELU: "Relu",
    Op.GELU: "Gelu (opset 20+) / Erf formula",
    Op.SIGMOID: "Sigmoid",
    Op.BN: "BatchNormalization",
    Op.LN: "LayerNormalization",
    Op.ADD: "Add / Sum",
    Op.MUL: "Mul (chained)",
    Op.MATMUL: "MatMul",
    Op.CONCAT: "Concat",
    Op.MEAN: "ReduceMean",
    Op.MAX: "ReduceMax",
    Op.SUM: "ReduceSum",
    Op.SOFTMAX: "Softmax",
    Op.PERMUTE: "Transpose",
    Op.REPEAT: "Tile (+ Unsqueeze)",
    Op.RESHAPE: "Reshape (shape computed from Shape of the input)",
    Op.DROP_PATH: "Identity",
    Op.ZERO: "ConstantOfShape(Shape)",
}
