"""The ONNX backend: builds an ONNX graph straight from the IR with `onnx.helper`.

Each operation has one lowering in `LOWERINGS`, keyed by `Op` (a test fails when an
operation of `Group.COMPUTE` lacks one). A lowering receives the names of its input
tensors, in edge order, and returns the name of its output tensor. Weights are taken
from a PyTorch `BlockModule` built by the PyTorch backend, so both backends compute the
same function with the same parameters (the tests compare them with onnxruntime).

The exported models are correct for every input size: the batch `B` and the spatial
sizes `H`, `W` are symbolic dimensions of the graph inputs. Where a size expression of
the block uses `B`, `H` or `W` (`reshape(B,C,H*W)`, `repeat(1,1,H,1)`), it is computed in
the graph from `Shape` of the block's input. "Same" padding is expressed exactly with
static asymmetric `pads` (see `same_pads`), which is right for every `H`, whatever
`H mod stride`. See docs/backends.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from nader.compiler.passes.contract import SQUARE, Domain
from nader.compiler.passes.shapes import ShapeResult, shape_str
from nader.compiler.passes.symbolic import Poly
from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue, Value, constant_int
from nader.dsl.ir import Block, Node, Role, id_token
from nader.dsl.ops import Group, Op

DEFAULT_OPSET = 17
MIN_OPSET = 17
MAX_OPSET = 21  # the newest opset these lowerings are written and tested against
PRODUCER = "nadc"

# Graph input names by input terminal, in the order the graph (and BlockModule.forward) takes them.
INPUT_NAMES = {Op.INPUT: "input", Op.INPUT1: "input1", Op.INPUT2: "input2"}
OUTPUT_NAME = "output"


class OnnxLoweringError(Exception):
    """The block or module cannot be lowered (the message says why; no traceback for users)."""


# -- "same" padding ------------------------------------------------------------------------

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


# -- the lowering context -------------------------------------------------------------------

# A size during lowering: a Fraction when it is known at export time, else a `Dyn`.
@dataclass(frozen=True)
class Dyn:
    """A size computed in the graph: `tensor / denominator`, `tensor` an int64 tensor of shape (1,)."""

    tensor: str
    denominator: int = 1


Size = Union[Fraction, Dyn]


class Lowering:
    """Builds one graph: nodes, initializers and unique names."""

    def __init__(self, opset: int, prefix: str = ""):
        self.opset = opset
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.value_info: list[onnx.ValueInfoProto] = []
        self._names: set[str] = set()
        self._consts: dict[tuple, str] = {}

    def name(self, base: str, prefixed: bool = True) -> str:
        base = self.prefix + base if prefixed else base
        candidate, k = base, 1
        while candidate in self._names:
            k += 1
            candidate = f"{base}_{k}"
        self._names.add(candidate)
        return candidate

    def reserve(self, name: str) -> str:
        self._names.add(name)
        return name

    def add(self, op_type: str, inputs: Sequence[str], base: str, outputs: int = 1, **attrs) -> str:
        """Adds a node; returns its (first) output name."""
        outs = [self.name(base if k == 0 else f"{base}_out{k}") for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=self.name(f"{base}/{op_type}"), **attrs))
        return outs[0]

    def add_to(self, op_type: str, inputs: Sequence[str], output: str, **attrs) -> str:
        """Adds a node writing to a given (reserved) output name."""
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=self.name(f"{output}/{op_type}"), **attrs))
        return output

    def weight(self, array: np.ndarray, base: str) -> str:
        name = self.name(base)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, values: Sequence[int], base: str = "const") -> str:
        """An int64 1-D constant (shared between uses)."""
        key = tuple(int(v) for v in values)
        if key not in self._consts:
            name = self.name(f"{base}_" + "_".join(str(v).replace("-", "m") for v in key) if len(key) <= 6 else base,
                             prefixed=False)
            self.initializers.append(numpy_helper.from_array(np.array(key, dtype=np.int64), name))
            self._consts[key] = name
        return self._consts[key]

    def scalar_f32(self, value: float, base: str) -> str:
        key = ("f32", float(value))
        if key not in self._consts:
            name = self.name(base, prefixed=False)
            self.initializers.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
            self._consts[key] = name
        return self._consts[key]

    # -- reductions whose axes moved from attribute to input in opset 18 ------------------
    def reduce(self, op_type: str, x: str, axes: Sequence[int], base: str, keepdims: int = 1) -> str:
        axes_as_input = op_type == "ReduceSum" or self.opset >= 18
        if axes_as_input:
            return self.add(op_type, [x, self.const(axes, "axes")], base, keepdims=keepdims)
        return self.add(op_type, [x], base, axes=list(axes), keepdims=keepdims)

    def unsqueeze(self, x: str, axes: Sequence[int], base: str) -> str:
        return self.add("Unsqueeze", [x, self.const(axes, "axes")], base)


@dataclass
class BlockContext:
    """What a lowering sees: the block, its shapes, weights, concrete widths and the input's sizes."""

    block: Block
    shapes: ShapeResult
    layers: Mapping[str, object]
    sizes: dict[str, int]  # concrete C and dim
    inputs: dict[Op, str]  # graph tensors of the input terminals
    g: Lowering
    _symbols: dict[str, str] = field(default_factory=dict)

    def layer(self, node: Node):
        key = f"n{id_token(node.id)}"
        try:
            return self.layers[key]
        except (KeyError, TypeError):
            raise OnnxLoweringError(f"the module has no layer `{key}` for node {node.id} (`{node.op_name}`)") from None

    # -- sizes -------------------------------------------------------------------------------
    def symbol(self, name: str) -> Size:
        if name in self.sizes:
            return Fraction(self.sizes[name])
        axis = {"B": 0, "H": 2, "W": 3}.get(name)
        if axis is None:
            raise OnnxLoweringError(f"unknown size symbol `{name}`")
        if name not in self._symbols:
            source = self.inputs.get(Op.INPUT) or self.inputs.get(Op.INPUT1) or self.inputs.get(Op.INPUT2)
            self._symbols[name] = self.g.add("Shape", [source], f"size_{name}", start=axis, end=axis + 1)
        return Dyn(self._symbols[name])

    def size(self, value: Value) -> Size:
        """The value of a size expression: folded where constant, else computed in the graph."""
        if isinstance(value, Num):
            if isinstance(value.value, float):
                raise OnnxLoweringError(f"size `{value}` is not a whole number")
            return Fraction(value.value)
        if isinstance(value, Sym):
            return self.symbol(value.name)
        if isinstance(value, Neg):
            return self._mul(self.size(value.operand), Fraction(-1))
        if isinstance(value, BinOp):
            a, b = self.size(value.lhs), self.size(value.rhs)
            if value.op == "+":
                return self._add(a, b)
            if value.op == "-":
                return self._add(a, self._mul(b, Fraction(-1)))
            if value.op == "*":
                return self._mul(a, b)
            if value.op == "/":
                return self._div(a, b)
            return self._floordiv(a, b)
        raise OnnxLoweringError(f"`{value}` is not a size expression")

    def _tensor(self, x: Size) -> str:
        """An int64 tensor (shape (1,)) holding an integer size."""
        g = self.g
        if isinstance(x, Fraction):
            if x.denominator != 1:
                raise OnnxLoweringError(f"size {x} is not a whole number at these widths")
            return g.const([int(x)])
        if x.denominator == 1:
            return x.tensor
        return g.add("Div", [x.tensor, g.const([x.denominator])], "size")  # exact by the verifier's constraints

    def _scaled(self, x: Dyn, factor: int) -> str:
        return x.tensor if factor == 1 else self.g.add("Mul", [x.tensor, self.g.const([factor])], "size")

    def _add(self, a: Size, b: Size) -> Size:
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return a + b
        if isinstance(a, Fraction):
            a, b = b, a
        assert isinstance(a, Dyn)
        if isinstance(b, Fraction):
            # a.t/a.d + n/m = (a.t*m + n*a.d) / (a.d*m)
            n, m = b.numerator, b.denominator
            t = self._scaled(a, m)
            return Dyn(self.g.add("Add", [t, self.g.const([n * a.denominator])], "size"), a.denominator * m)
        t1, t2 = self._scaled(a, b.denominator), self._scaled(b, a.denominator)
        return Dyn(self.g.add("Add", [t1, t2], "size"), a.denominator * b.denominator)

    def _mul(self, a: Size, b: Size) -> Size:
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return a * b
        if isinstance(a, Fraction):
            a, b = b, a
        assert isinstance(a, Dyn)
        if isinstance(b, Fraction):
            if b == 1:
                return a
            return Dyn(self._scaled(a, b.numerator), a.denominator * b.denominator)
        return Dyn(self.g.add("Mul", [a.tensor, b.tensor], "size"), a.denominator * b.denominator)

    def _div(self, a: Size, b: Size) -> Size:
        """Exact division (the verifier guarantees a whole result under the block's constraints)."""
        if isinstance(b, Fraction):
            if b == 0:
                raise OnnxLoweringError("division by zero in a size")
            return self._mul(a, 1 / b)
        # a / (t/d) = a*d / t, computed as an integer division (exact).
        numerator = self._tensor(self._mul(a, Fraction(b.denominator)))
        return Dyn(self.g.add("Div", [numerator, b.tensor], "size"))

    def _floordiv(self, a: Size, b: Size) -> Size:
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            if b == 0:
                raise OnnxLoweringError("division by zero in a size")
            return Fraction(math.floor(a / b))
        g = self.g
        # floor(x/y) for x = a.t/a.d, y = b.t/b.d is floor((a.t*b.d) / (a.d*b.t)).
        if isinstance(a, Fraction):
            a_num, a_den = a.numerator, a.denominator
            num = g.const([a_num * (b.denominator if isinstance(b, Dyn) else 1)])
        else:
            a_den = a.denominator
            num = self._scaled(a, b.denominator if isinstance(b, Dyn) else Fraction(b).denominator)
        if isinstance(b, Fraction):
            den_value = a_den * b.numerator
            if den_value == 0:
                raise OnnxLoweringError("division by zero in a size")
            den = g.const([den_value])
        else:
            den = b.tensor if a_den == 1 else g.add("Mul", [b.tensor, g.const([a_den])], "size")
        # Python floor division for any signs: (x - x mod y) / y, with Mod's fmod=0 (sign of divisor).
        remainder = g.add("Mod", [num, den], "size", fmod=0)
        return Dyn(g.add("Div", [g.add("Sub", [num, remainder], "size"), den], "size"))

    def shape_tensor(self, values: Sequence[Value]) -> str:
        """A 1-D int64 tensor of sizes, folded into one constant where all are known."""
        sizes = [self.size(v) for v in values]
        if all(isinstance(s, Fraction) for s in sizes):
            for s in sizes:
                if s.denominator != 1:  # type: ignore[union-attr]
                    raise OnnxLoweringError(f"size {s} is not a whole number at these widths")
            return self.g.const([int(s) for s in sizes])  # type: ignore[arg-type]
        parts = [self._tensor(s) for s in sizes]
        return self.g.add("Concat", parts, "shape", axis=0)

    def rank(self, node_id: int) -> int:
        return len(self.shapes.shapes[node_id])

    def input_rank(self, node: Node, index: int = 0) -> int:
        return self.rank(self.block.inputs_of(node.id)[index])


# -- lowerings, one per operation -----------------------------------------------------------

def _np(tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy().astype(np.float32)


def _lower_conv(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    layer = ctx.layer(node)
    (kh, kw), (sh, sw) = _pair(node.params["kernel_size"]), _pair(node.params["stride"])
    dh, dw = _pair(node.params["dilation"])
    (top, bottom), (left, right) = same_pads(kh, sh, dh), same_pads(kw, sw, dw)
    if tuple(layer.weight.shape[2:]) != (kh, kw):
        raise OnnxLoweringError(f"node {node.id}: the module's kernel {tuple(layer.weight.shape[2:])} is not ({kh},{kw})")
    return conv_node(ctx.g, layer, xs[0], base, pads=[top, left, bottom, right], strides=[sh, sw], dilations=[dh, dw])


def conv_node(g: Lowering, conv, x: str, base: str, *, pads: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int]) -> str:
    """A Conv node with the weights (and bias, if any) of an nn.Conv2d."""
    weight = _np(conv.weight)
    inputs = [x, g.weight(weight, f"{base}.weight")]
    if getattr(conv, "bias", None) is not None:
        inputs.append(g.weight(_np(conv.bias), f"{base}.bias"))
    return g.add("Conv", inputs, base, kernel_shape=list(weight.shape[2:]), strides=list(strides),
                 dilations=list(dilations), group=int(conv.groups), pads=list(pads))


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
    weight = _np(layer.weight)  # (out, in)
    bias = getattr(layer, "bias", None)
    g = ctx.g
    if ctx.input_rank(node) == 2:
        inputs = [xs[0], g.weight(weight, f"{base}.weight")]
        if bias is not None:
            inputs.append(g.weight(_np(bias), f"{base}.bias"))
        return g.add("Gemm", inputs, base, transB=1)
    y = g.add("MatMul", [xs[0], g.weight(np.ascontiguousarray(weight.T), f"{base}.weight_t")],
              base if bias is None else f"{base}_matmul")
    if bias is None:
        return y
    return g.add("Add", [y, g.weight(_np(bias), f"{base}.bias")], base)


def _lower_bn(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    return bn_node(ctx.g, ctx.layer(node), xs[0], base)


def bn_node(g: Lowering, bn, x: str, base: str) -> str:
    """BatchNormalization in inference mode with an nn.BatchNorm2d's parameters and running statistics."""
    channels = int(bn.num_features)
    weight = _np(bn.weight) if getattr(bn, "weight", None) is not None else np.ones(channels, np.float32)
    bias = _np(bn.bias) if getattr(bn, "bias", None) is not None else np.zeros(channels, np.float32)
    mean = _np(bn.running_mean) if getattr(bn, "running_mean", None) is not None else None
    var = _np(bn.running_var) if getattr(bn, "running_var", None) is not None else None
    if mean is None or var is None:
        raise OnnxLoweringError(f"{base}: BN without running statistics cannot be exported for inference")
    inputs = [x, g.weight(weight, f"{base}.weight"), g.weight(bias, f"{base}.bias"),
              g.weight(mean, f"{base}.running_mean"), g.weight(var, f"{base}.running_var")]
    return g.add("BatchNormalization", inputs, base, epsilon=float(bn.eps))  # inference mode


def _lower_ln(ctx: BlockContext, node: Node, xs: list[str], base: str) -> str:
    ln = ctx.layer(node)
    shape = tuple(ln.normalized_shape)
    if len(shape) != 1:
        raise OnnxLoweringError(f"node {node.id}: LN must normalise the last axis only, not {shape}")
    weight = _np(ln.weight) if getattr(ln, "weight", None) is not None else np.ones(shape, np.float32)
    g = ctx.g
    inputs = [xs[0], g.weight(weight, f"{base}.weight")]
    if getattr(ln, "bias", None) is not None:
        inputs.append(g.weight(_np(ln.bias), f"{base}.bias"))
    return g.add("LayerNormalization", inputs, base, axis=-1, epsilon=float(ln.eps))


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


# -- blocks ---------------------------------------------------------------------------------

def _dim(size: Poly, known: Mapping[str, int]) -> Union[int, str, None]:
    """A dimension for ONNX type annotations: an int, a symbolic name in B/H/W, or None (unknown)."""
    free = size.free_symbols()
    if free <= set(known):
        value = size.evaluate(known)
        return int(value) if value.denominator == 1 else None
    if free <= {"B", "H", "W"}:
        return str(size)
    return None  # mixes widths and spatial sizes: left for tools to infer


def _tensor_type(shape: Sequence[Poly], known: Mapping[str, int], name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [_dim(s, known) for s in shape])


def _module_report(module, block: Block, role: Optional[Role], stem_stride: int):
    report = getattr(module, "report", None)
    if report is None or getattr(report, "shapes", None) is None:
        from nader.compiler.passes.verify import verify_block
        report = verify_block(block, role=role, stem_stride=stem_stride)
    if not report.ok or report.shapes is None:
        raise OnnxLoweringError(f"block `{block.name}` does not verify; run `nadc verify` for the diagnostics")
    return report


def _widths(module, report, in_channels: Optional[int], out_channels: Optional[int]) -> dict[str, int]:
    """Concrete C and dim of a built module."""
    built = (getattr(module, "in_channels", None), getattr(module, "out_channels", None))
    for given, have, what in ((in_channels, built[0], "C"), (out_channels, built[1], "dim")):
        if given is not None and have is not None and given != have:
            raise OnnxLoweringError(f"the module was built at {what}={have}, not {given}")
    c = in_channels if in_channels is not None else built[0]
    d = out_channels if out_channels is not None else built[1]
    if c is None:
        raise OnnxLoweringError("the module's input width is unknown; pass in_channels=")
    if report.role is Role.STEM:
        c = 3 if in_channels is None and getattr(module, "in_channels", None) is None else c
    if d is None:
        d = int(report.shapes.contract.env["dim"].evaluate({"C": c}))
    return {"C": int(c), "dim": int(d)}


def lower_block(g: Lowering, block: Block, shapes: ShapeResult, layers: Mapping[str, object],
                widths: Mapping[str, int], inputs: Mapping[Op, str]) -> str:
    """Lowers one block's nodes into `g`; `inputs` maps input terminals to tensors. Returns the output tensor."""
    ctx = BlockContext(block, shapes, layers, dict(widths), dict(inputs), g)
    nodes = block.node_map()
    order = shapes.order  # the live nodes: dead ones are dropped
    values: dict[int, str] = {}
    output: Optional[str] = None
    for node_id in order:
        node = nodes[node_id]
        op = node.op
        if op in INPUT_NAMES:
            if op not in ctx.inputs:
                raise OnnxLoweringError(f"block `{block.name}`: no tensor for its `{op}` terminal")
            values[node_id] = ctx.inputs[op]
            continue
        xs = [values[i] for i in block.inputs_of(node_id)]
        if op is Op.OUTPUT:
            output = xs[0]
            continue
        lowering = LOWERINGS.get(op)  # type: ignore[arg-type]
        if lowering is None:
            raise OnnxLoweringError(f"no ONNX lowering for `{node.op_name}` (node {node_id})")
        values[node_id] = lowering(ctx, node, xs, f"n{id_token(node_id)}_{str(op).lower()}")
    if output is None:
        raise OnnxLoweringError(f"block `{block.name}` has no output")
    return output


def block_to_onnx(block: Block, module, *, role: Optional[Role] = None, stem_stride: int = 1,
                  in_channels: Optional[int] = None, out_channels: Optional[int] = None,
                  opset: int = DEFAULT_OPSET, input_size: Optional[int] = None,
                  annotate_shapes: bool = True) -> onnx.ModelProto:
    """The ONNX model of `block` with the weights of `module` (a BlockModule of the PyTorch backend).

    Inputs are `input` (or `input1`, `input2` for cells) of shape `(B,C,H,W)` and the output is
    `output`; `B`, `H` and `W` are symbolic unless `input_size` fixes `H = W = input_size`. In the
    square domain both spatial dimensions are `H`; a module built for one resolution (resolution-
    bound layers, or verified at a fixed size) fixes the input to it.
    Intermediate tensors carry their symbolic shapes where they are expressible in `B`, `H`, `W`.
    """
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxLoweringError(f"opset {opset} is not supported; use {MIN_OPSET} to {MAX_OPSET}")
    report = _module_report(module, block, role, stem_stride)
    shapes = report.shapes
    built_for = getattr(module, "input_size", None) if (shapes.resolution_bound or report.domain.size) else None
    if built_for is not None:
        if input_size is not None and input_size != built_for:
            raise OnnxLoweringError(f"block `{block.name}` was built for {built_for}x{built_for} inputs, not {input_size}")
        input_size = built_for
    widths = _widths(module, report, in_channels, out_channels)
    width_constraints = [c for c in shapes.constraints if c.size.free_symbols() <= {"C", "dim"}]
    if not all(c.holds(widths) for c in width_constraints):
        raise OnnxLoweringError(f"block `{block.name}` needs {', '.join(report.constraints)}; "
                                f"C={widths['C']}, dim={widths['dim']} do not satisfy it")
    layers = getattr(module, "layers", None)
    if layers is None:
        raise OnnxLoweringError("the module has no `layers` (expected a BlockModule of the PyTorch backend)")
    known = dict(widths)
    if input_size is not None:
        known.update(H=input_size, W=input_size)
    g = Lowering(opset)
    inputs: dict[Op, str] = {}
    graph_inputs = []
    for op in (Op.INPUT, Op.INPUT1, Op.INPUT2):
        if op in shapes.contract.inputs:
            inputs[op] = g.reserve(INPUT_NAMES[op])
            graph_inputs.append(_tensor_type(shapes.contract.inputs[op], known, INPUT_NAMES[op]))
    result = lower_block(g, block, shapes, layers, widths, inputs)
    g.reserve(OUTPUT_NAME)
    g.add_to("Identity", [result], OUTPUT_NAME)
    out_type = _tensor_type(shapes.contract.output, known, OUTPUT_NAME)
    value_info = []
    if annotate_shapes:
        value_info = _annotations(block, shapes, known, g)
    graph = helper.make_graph(g.nodes, _graph_name(block.name), graph_inputs, [out_type], g.initializers,
                              doc_string=f"NADER block `{block.name}` ({report.role})", value_info=value_info)
    model = _model(graph, opset, {
        "nader.block": block.name, "nader.role": str(report.role), "nader.C": str(widths["C"]),
        "nader.dim": str(widths["dim"]), "nader.constraints": "; ".join(report.constraints),
        "nader.output_shape": shape_str(shapes.contract.output)})
    return model


def _annotations(block: Block, shapes: ShapeResult, known: Mapping[str, int], g: Lowering) -> list:
    """Value infos of the nodes' main output tensors (`n{id}_{op}`), with symbolic dims."""
    nodes = block.node_map()
    produced = {o for n in g.nodes for o in n.output}
    infos = []
    for node_id, shape in shapes.shapes.items():
        node = nodes.get(node_id)
        if node is None or node.op in Group.TERMINAL:
            continue
        name = f"n{id_token(node_id)}_{str(node.op).lower()}"
        if name in produced:
            infos.append(_tensor_type(shape, known, name))
    return infos


def _graph_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-." else "_" for ch in name) or "block"


def _model(graph: onnx.GraphProto, opset: int, metadata: Mapping[str, str]) -> onnx.ModelProto:
    from nader import __version__
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=PRODUCER,
                              producer_version=__version__)
    # The IR version of the opset, so older runtimes load the model.
    model.ir_version = min(onnx.IR_VERSION, _IR_FOR_OPSET.get(opset, onnx.IR_VERSION))
    helper.set_model_props(model, dict(metadata))
    return model


_IR_FOR_OPSET = {17: 8, 18: 8, 19: 9, 20: 9, 21: 10}


def check(model: onnx.ModelProto) -> onnx.ModelProto:
    """Runs the ONNX checker (full) and strict shape inference; returns the inferred model."""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


# -- the emitter ---------------------------------------------------------------------------

DEFAULT_WIDTH = 64


def emit(parsed, options) -> bytes:
    """`nadc FILE --emit onnx -o out.onnx`.

    Without `--network`, the first block of the file is exported (NADER's files hold a base block
    first, then its stem and downsample blocks); when the file holds more, a note on stderr names
    the ones left out. With `--network SKELETON` the whole network is exported.

    Widths: a block is built at input width `--in-channels`, else the first of `--widths`, else
    64 (or the smallest larger width meeting its constraints); a stem takes 3 channels and outputs
    the first of `--widths` (else `--in-channels`, else that default).
    `--input-size S` fixes H = W = S in the model; without it they stay symbolic.
    """
    from nader.compiler.commands.compile import EmitError

    if getattr(options, "network", None):
        return _emit_network(parsed, options)
    blocks = parsed.program.blocks
    if not blocks:
        raise EmitError(f"{parsed.program.path}: no block to export")
    block = blocks[0]
    if len(blocks) > 1:
        import click
        others = ", ".join(f"`{b.name}`" for b in blocks[1:])
        click.echo(f"nadc: note: {parsed.program.path}: exporting the first block `{block.name}` only; "
                   f"an ONNX model holds one graph ({others} left out; use --network to export a network, "
                   f"or put a block in a file of its own)", err=True)
    widths = getattr(options, "widths", None) or ()
    role = options.role or block.inferred_role()
    if role is Role.STEM:  # a stem takes 3 channels; its output is the first stage's width
        in_channels, out_channels = 3, (widths[0] if widths else options.in_channels)
    else:
        in_channels, out_channels = options.in_channels or (widths[0] if widths else None), None
    try:
        model = export_block(block, role=role, stem_stride=options.stem_stride, in_channels=in_channels,
                             out_channels=out_channels, input_size=options.input_size, domain=options.domain)
    except OnnxLoweringError as error:
        raise EmitError(str(error)) from None
    return model.SerializeToString()


def export_block(block: Block, *, role: Optional[Role] = None, stem_stride: int = 1,
                 in_channels: Optional[int] = None, out_channels: Optional[int] = None,
                 input_size: Optional[int] = None, opset: int = DEFAULT_OPSET, seed: int = 0,
                 domain: Domain = SQUARE) -> onnx.ModelProto:
    """Builds the PyTorch module (seeded, so the output is reproducible) and exports it.

    Widths not given default to 64, or to the smallest width above it that meets the block's
    constraints (`C % 128 == 0` gives 128); a stem's input width is always 3.
    """
    import torch

    from nader.compiler.backends import torch_backend
    from nader.compiler.passes.verify import verify_block

    report = verify_block(block, role=role, stem_stride=stem_stride, domain=domain)
    role = report.role
    if role is Role.STEM:
        c_in, c_out = 3, out_channels or _default_width(report)
    else:
        c_in, c_out = in_channels or _default_width(report), out_channels
    if report.ok and report.shapes.resolution_bound and input_size is None and report.domain.size is None:
        raise OnnxLoweringError(f"block `{block.name}` is tied to its input resolution (node "
                                f"{report.shapes.resolution_bound[0]} learns over a spatial axis, NAD317): "
                                f"give the size to export it for with --input-size")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            module = torch_backend.build_torch(block, c_in, c_out, role=role, stem_stride=stem_stride, report=report,
                                               input_size=input_size)
        except torch_backend.BuildError as error:
            raise OnnxLoweringError(str(error)) from None
    module.eval()
    model = block_to_onnx(block, module, role=role, stem_stride=stem_stride, in_channels=c_in,
                          out_channels=c_out, opset=opset, input_size=input_size)
    check(model)
    return model


def _default_width(report, limit: int = 4096) -> int:
    """DEFAULT_WIDTH, or the smallest larger width meeting the block's width constraints."""
    if report.shapes is None or report.shapes.failed:
        return DEFAULT_WIDTH
    constraints = [c for c in report.shapes.constraints if c.size.free_symbols() <= {"C", "dim"}]
    for width in range(DEFAULT_WIDTH, limit + 1):
        sizes = report.shapes.sizes(width)
        if all(c.holds(sizes) for c in constraints):
            return width
    return DEFAULT_WIDTH  # build_torch reports the constraint


# -- networks --------------------------------------------------------------------------------

def _module_lowering(module) -> Optional[Callable]:
    for cls in type(module).__mro__:
        if cls.__name__ in MODULE_LOWERINGS:
            return MODULE_LOWERINGS[cls.__name__]
    return None


def lower_module(g: Lowering, module, xs: list[str], path: str) -> str:
    """Lowers a module of a built network (skeleton classes, BlockModules, a few torch layers)."""
    lowering = _module_lowering(module)
    if lowering is None:
        raise OnnxLoweringError(f"no ONNX lowering for the module `{path or 'network'}` ({type(module).__name__})")
    return lowering(g, module, xs, path)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _with_prefix(g: Lowering, path: str, fn: Callable[[], str]) -> str:
    saved = g.prefix
    g.prefix = f"{path}/" if path else ""
    try:
        return fn()
    finally:
        g.prefix = saved


def _lower_block_module(g: Lowering, module, xs: list[str], path: str) -> str:
    report = module.report
    if report is None or report.shapes is None or not report.ok:
        raise OnnxLoweringError(f"{path}: the block does not verify")
    ops = list(report.shapes.contract.inputs)
    if len(ops) != len(xs):
        raise OnnxLoweringError(f"{path}: block `{report.block.name}` takes {len(ops)} inputs, got {len(xs)}")
    widths = {"C": int(module.in_channels), "dim": int(module.out_channels)}
    return _with_prefix(g, path, lambda: lower_block(g, report.block, report.shapes, module.layers, widths,
                                                     dict(zip(ops, xs))))


def _lower_sequential(g: Lowering, module, xs: list[str], path: str) -> str:
    (x,) = xs
    for name, child in module.named_children():
        x = lower_module(g, child, [x], _child(path, name))
    return x


def _lower_identity_module(g: Lowering, module, xs: list[str], path: str) -> str:
    return xs[0]


def _lower_relu_module(g: Lowering, module, xs: list[str], path: str) -> str:
    return g.add("Relu", [xs[0]], f"{path}/relu" if path else "relu")


def _lower_conv_module(g: Lowering, conv, xs: list[str], path: str) -> str:
    """An nn.Conv2d of the skeleton (symmetric PyTorch padding, zeros)."""
    if isinstance(conv.padding, str) or getattr(conv, "padding_mode", "zeros") != "zeros":
        raise OnnxLoweringError(f"{path}: only numeric zero padding is supported, not {conv.padding!r}")
    ph, pw = conv.padding
    return conv_node(g, conv, xs[0], path, pads=[ph, pw, ph, pw], strides=list(conv.stride),
                     dilations=list(conv.dilation))


def _lower_bn_module(g: Lowering, bn, xs: list[str], path: str) -> str:
    return bn_node(g, bn, xs[0], path)


def _lower_global_pool_module(g: Lowering, module, xs: list[str], path: str) -> str:
    size = module.output_size
    if size not in (1, (1, 1), [1, 1]):
        raise OnnxLoweringError(f"{path}: only adaptive pooling to 1x1 is supported in skeletons, not {size}")
    return g.add("GlobalAveragePool", [xs[0]], path)


def _lower_linear_module(g: Lowering, linear, xs: list[str], path: str) -> str:
    inputs = [xs[0], g.weight(_np(linear.weight), f"{path}.weight")]
    if linear.bias is not None:
        inputs.append(g.weight(_np(linear.bias), f"{path}.bias"))
    return g.add("Gemm", inputs, path, transB=1)


def _lower_factorized_reduce(g: Lowering, module, xs: list[str], path: str) -> str:
    """DARTS' FactorizedReduce, exact for every H, W (odd ones too).

    PyTorch: `relu`; `conv_1` (1x1, stride 2) of x; `conv_2` of `x[:, :, 1:, 1:]` padded at the end by
    `H % 2`, `W % 2`; concat; BN. A 1x1 stride-2 convolution of `x[1:]` with one row of end padding reads
    rows 1, 3, ... of x and, for odd H, a zero row last: the same as the dynamic padding, with static pads.
    """
    x = g.add("Relu", [xs[0]], f"{path}/relu")
    a = conv_node(g, module.conv_1, x, f"{path}.conv_1", pads=[0, 0, 0, 0], strides=[2, 2], dilations=[1, 1])
    big = np.iinfo(np.int64).max
    shifted = g.add("Slice", [x, g.const([1, 1], "starts"), g.const([big, big], "ends"), g.const([2, 3], "axes")],
                    f"{path}/shifted")
    b = conv_node(g, module.conv_2, shifted, f"{path}.conv_2", pads=[0, 0, 1, 1], strides=[2, 2], dilations=[1, 1])
    y = g.add("Concat", [a, b], f"{path}/concat", axis=1)
    return bn_node(g, module.bn, y, f"{path}.bn")


def _lower_cell(g: Lowering, module, xs: list[str], path: str) -> str:
    s0, s1 = xs
    a = lower_module(g, module.preprocess0, [s0], _child(path, "preprocess0"))
    b = lower_module(g, module.preprocess1, [s1], _child(path, "preprocess1"))
    return lower_module(g, module.cell, [a, b], _child(path, "cell"))


def _head(g: Lowering, module, h: str) -> str:
    pooled = lower_module(g, module.avg_pool, [h], "avg_pool")
    flat = g.add("Flatten", [pooled], "flatten", axis=1)
    return lower_module(g, module.fc, [flat], "fc")


def _lower_staged_network(g: Lowering, module, xs: list[str], path: str) -> str:
    h = lower_module(g, module.stem, xs, "stem")
    for i in range(1, module.num_stages + 1):
        h = lower_module(g, getattr(module, f"layer{i}"), [h], f"layer{i}")
        if i < module.num_stages:
            h = lower_module(g, getattr(module, f"downsample{i}"), [h], f"downsample{i}")
    if getattr(module, "lastact", None) is not None:
        h = lower_module(g, module.lastact, [h], "lastact")
    return _head(g, module, h)


def _lower_darts_network(g: Lowering, module, xs: list[str], path: str) -> str:
    s0 = s1 = lower_module(g, module.stem, xs, "stem")
    for index, cell in enumerate(module.cells):
        s0, s1 = s1, lower_module(g, cell, [s0, s1], f"cells.{index}")
    return _head(g, module, s1)


# Module lowerings by class name (the skeleton classes are defined lazily in compiler/network.py).
MODULE_LOWERINGS: dict[str, Callable[[Lowering, object, list[str], str], str]] = {
    "BlockModule": _lower_block_module,
    "StagedNetwork": _lower_staged_network,
    "DartsNetwork": _lower_darts_network,
    "Cell": _lower_cell,
    "FactorizedReduce": _lower_factorized_reduce,
    "Sequential": _lower_sequential,
    "Identity": _lower_identity_module,
    "ReLU": _lower_relu_module,
    "Conv2d": _lower_conv_module,
    "BatchNorm2d": _lower_bn_module,
    "AdaptiveAvgPool2d": _lower_global_pool_module,
    "Linear": _lower_linear_module,
}


def network_to_onnx(module, *, opset: int = DEFAULT_OPSET, input_size: Optional[int] = None,
                    info: Optional[Mapping] = None, name: str = "network") -> onnx.ModelProto:
    """The ONNX model of a network built by `nader.compiler.network.build_network` (eval-mode semantics).

    Input `input` is `(B,3,H,W)` with B, H, W symbolic unless `input_size` fixes H = W; output
    `output` is `(B,num_classes)`.
    """
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxLoweringError(f"opset {opset} is not supported; use {MIN_OPSET} to {MAX_OPSET}")
    g = Lowering(opset)
    x = g.reserve("input")
    result = lower_module(g, module, [x], "")
    g.reserve(OUTPUT_NAME)
    g.add_to("Identity", [result], OUTPUT_NAME)
    size = [input_size, input_size] if input_size else ["H", "W"]
    graph_input = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["B", 3, *size])
    classes = int(module.fc.out_features)
    graph_output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["B", classes])
    graph = helper.make_graph(g.nodes, _graph_name(name), [graph_input], [graph_output], g.initializers,
                              doc_string="NADER network")
    metadata = {"nader.network": name}
    for key, value in (info or {}).items():
        if isinstance(value, (str, int, float)) or (isinstance(value, (list, tuple)) and
                                                    all(isinstance(v, (int, float, str)) for v in value)):
            metadata[f"nader.{key}"] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return _model(graph, opset, metadata)


def export_network(parsed, *, skeleton: str, dataset: Optional[str] = None, widths=None, depths=None,
                   input_size: Optional[int] = None, stem_stride: Optional[int] = None,
                   opset: int = DEFAULT_OPSET, seed: int = 0, fix_input_size: bool = False):
    """Builds the network of a parsed architecture file (seeded) and exports it; returns (model, module, info)."""
    import torch

    from nader.compiler.network import BuildError, analyze, architecture_from_program, assemble, skeleton_info

    try:
        skel = skeleton_info(skeleton)
        dataset = dataset or ("imagenet" if skel.name == "imagenet" else "cifar10")
        arch = architecture_from_program(parsed.program, parsed.diagnostics, skel, stem_stride=stem_stride)
        info = analyze("", skel.name, dataset, widths=widths, depths=depths, input_size=input_size, arch=arch)
        plan, arch = info.pop("_plan"), info.pop("_arch")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = assemble(arch, plan)
    except BuildError as error:
        raise OnnxLoweringError(str(error)) from None
    module.eval()
    name = f"{arch.base.name} on {skel.name}"
    # Symbolic H and W only where every block runs at every size with one set of weights; a network
    # with square-only or resolution-bound blocks is fixed to the input size it was built for.
    fix_input_size = fix_input_size or not arch.runs_at_any_size()
    model = network_to_onnx(module, opset=opset, input_size=info["input_size"] if fix_input_size else None,
                            info={k: v for k, v in info.items() if k in
                                  ("skeleton", "dataset", "widths", "depths", "num_classes", "input_size",
                                   "stem_stride", "params", "flops")}, name=name)
    check(model)
    return model, module, info


def _emit_network(parsed, options) -> bytes:
    from nader.compiler.commands.compile import EmitError

    # --stem-stride defaults to 1 on the command line; 1 then means "the stride the stem has".
    stride = options.stem_stride if options.stem_stride and options.stem_stride != 1 else None
    try:
        model, _, info = export_network(parsed, skeleton=options.network, dataset=options.dataset,
                                        widths=options.widths, depths=options.depths, input_size=options.input_size,
                                        stem_stride=stride)
    except OnnxLoweringError as error:
        raise EmitError(str(error)) from None
    from nader.compiler.commands.common import print_notes
    print_notes(parsed.program.path, info)
    return model.SerializeToString()
