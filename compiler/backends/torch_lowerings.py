"""The PyTorch lowering table, `LOWERINGS`, keyed by `Op`: one lowering per operation.

Each entry turns a node (with its verified input shapes and concrete channel sizes, in a
`LowerContext`) into a `Lowered` value holding the leaf module (if the op has weights or thop
counts it), the call the forward pass makes, and the line of Python that `--emit torch` writes for
it. The walks that run the table (building a `BlockModule`, writing `block_source`) are
`torch_backend.py`'s; docs/semantics.md says what each operation computes.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import torch
from torch import nn

# The helpers the forward pass calls live in torch_support, which generated files copy (torch_source.py).
from nader.compiler.backends.torch_support import DropPath, crop_same, require_4d
from nader.compiler.passes.cost import has_bias
from nader.compiler.passes.symbolic import Poly, to_python
from nader.compiler.passes.verify import BlockReport
from nader.dsl.expr import Neg, Num, Sym, TupleValue, constant_int
from nader.dsl.expr import evaluate_expr
from nader.dsl.ir import Block, Node
from nader.dsl.ops import Op


# -- lowering -------------------------------------------------------------------------

@dataclass
class LowerContext:
    block: Block
    report: BlockReport
    sizes: Mapping[str, int]  # concrete C, dim (and sample B, H, W)
    node: Node = None  # type: ignore[assignment]

    def input_shapes(self) -> list[tuple]:
        return self.report.shapes.input_shapes(self.block, self.node.id)

    def channels(self, size: Poly) -> int:
        return int(size.evaluate(self.sizes))

    def facts(self) -> dict:
        return self.report.shapes.facts.get(self.node.id, {})


@dataclass
class Lowered:
    make: Optional[Callable[[], nn.Module]]  # builds the leaf module (stored as layers["n" + id_token(id)])
    call: Callable  # call(module, env, *inputs) -> tensor; env has B, H, W, C, dim
    source: Callable[[list[str], str], str]  # (input names, module ref) -> Python expression
    module_source: Optional[str] = None  # constructor text in C/dim, for emitted code


def _pair(value) -> tuple[int, int]:
    if isinstance(value, TupleValue):
        items = [constant_int(i) for i in value.items]
        return (items[0], items[-1])  # type: ignore[return-value]
    v = constant_int(value)
    return v, v  # type: ignore[return-value]


def _int_text(pair: tuple[int, int]) -> str:
    return str(pair[0]) if pair[0] == pair[1] else f"({pair[0]}, {pair[1]})"


def _sym(size: Poly) -> str:
    return to_python(size)


def _lower_conv(ctx: LowerContext) -> Lowered:
    n = ctx.node
    (x,) = ctx.input_shapes()
    out_shape = ctx.report.shapes.shapes[n.id]
    k, s, d = _pair(n.params["kernel_size"]), _pair(n.params["stride"]), _pair(n.params["dilation"])
    pad = tuple((d[i] * (k[i] - 1) + 1) // 2 for i in range(2))
    crop = any((d[i] * (k[i] - 1) + 1) % 2 == 0 for i in range(2))
    in_c, out_c = x[1], out_shape[1]
    groups_expr = ctx.facts()["groups"]
    groups = int(groups_expr.evaluate(ctx.sizes))
    bias = has_bias(n)
    module = lambda: nn.Conv2d(ctx.channels(in_c), ctx.channels(out_c), k, stride=s, padding=pad, dilation=d,
                               groups=groups, bias=bias)
    ctor = (f"nn.Conv2d({_sym(in_c)}, {_sym(out_c)}, {_int_text(k)}, stride={_int_text(s)}, "
            f"padding={_int_text(pad)}, dilation={_int_text(d)}, groups={_sym(groups_expr)}"
            f"{'' if bias else ', bias=False'})")
    if crop:
        def call(m, env, a):
            return crop_same(m(require_4d(a, "Conv2d")), a.shape[2], a.shape[3], s[0], s[1])
        src = lambda ins, ref: f"crop_same({ref}(require_4d({ins[0]}, 'Conv2d')), {ins[0]}.shape[2], {ins[0]}.shape[3], {s[0]}, {s[1]})"
    else:
        def call(m, env, a):
            return m(require_4d(a, "Conv2d"))
        src = lambda ins, ref: f"{ref}(require_4d({ins[0]}, 'Conv2d'))"
    return Lowered(module, call, src, ctor)


def _lower_pool(ctx: LowerContext) -> Lowered:
    n = ctx.node
    k, s = _pair(n.params["kernel_size"]), _pair(n.params["stride"])
    pad = (k[0] // 2, k[1] // 2)
    crop = k[0] % 2 == 0 or k[1] % 2 == 0
    if n.op is Op.AVG_POOL2D:
        module: Callable[[], nn.Module] = lambda: nn.AvgPool2d(k, s, padding=pad, count_include_pad=False)
        ctor = f"nn.AvgPool2d({_int_text(k)}, {_int_text(s)}, padding={_int_text(pad)}, count_include_pad=False)"
    else:
        module = lambda: nn.MaxPool2d(k, s, padding=pad)
        ctor = f"nn.MaxPool2d({_int_text(k)}, {_int_text(s)}, padding={_int_text(pad)})"
    name = n.op_name
    if crop:
        def call(m, env, a):
            return crop_same(m(require_4d(a, name)), a.shape[2], a.shape[3], s[0], s[1])
        src = lambda ins, ref: f"crop_same({ref}(require_4d({ins[0]}, '{name}')), {ins[0]}.shape[2], {ins[0]}.shape[3], {s[0]}, {s[1]})"
    else:
        def call(m, env, a):
            return m(require_4d(a, name))
        src = lambda ins, ref: f"{ref}(require_4d({ins[0]}, '{name}'))"
    return Lowered(module, call, src, ctor)


def _lower_adaptive(ctx: LowerContext) -> Lowered:
    n = ctx.node
    size = _pair(n.params["output_size"])
    cls = nn.AdaptiveAvgPool2d if n.op is Op.ADAPTIVE_AVG_POOL2D else nn.AdaptiveMaxPool2d
    name = n.op_name
    return Lowered(lambda: cls(size), lambda m, env, a: m(require_4d(a, name)),
                   lambda ins, ref: f"{ref}(require_4d({ins[0]}, '{name}'))", f"nn.{cls.__name__}({_int_text(size)})")


def _lower_linear(ctx: LowerContext) -> Lowered:
    (x,) = ctx.input_shapes()
    out = ctx.report.shapes.shapes[ctx.node.id][-1]
    return Lowered(lambda: nn.Linear(ctx.channels(x[-1]), ctx.channels(out)), lambda m, env, a: m(a), lambda ins, ref: f"{ref}({ins[0]})",
                   f"nn.Linear({_sym(x[-1])}, {_sym(out)})")


def _lower_bn(ctx: LowerContext) -> Lowered:
    (x,) = ctx.input_shapes()
    return Lowered(lambda: nn.BatchNorm2d(ctx.channels(x[1])), lambda m, env, a: m(a), lambda ins, ref: f"{ref}({ins[0]})",
                   f"nn.BatchNorm2d({_sym(x[1])})")


def _lower_ln(ctx: LowerContext) -> Lowered:
    (x,) = ctx.input_shapes()
    return Lowered(lambda: nn.LayerNorm(ctx.channels(x[-1])), lambda m, env, a: m(a), lambda ins, ref: f"{ref}({ins[0]})",
                   f"nn.LayerNorm({_sym(x[-1])})")


def _simple_module(cls: type, ctor: str) -> Callable[[LowerContext], Lowered]:
    def lower(ctx: LowerContext) -> Lowered:
        return Lowered(cls, lambda m, env, a: m(a), lambda ins, ref: f"{ref}({ins[0]})", ctor)
    return lower


def _lower_gelu(ctx: LowerContext) -> Lowered:
    return Lowered(nn.GELU, lambda m, env, a: m(a), lambda ins, ref: f"{ref}({ins[0]})", "nn.GELU()")


def _lower_softmax(ctx: LowerContext) -> Lowered:
    dim = constant_int(ctx.node.params["dim"])
    return Lowered(lambda: nn.Softmax(dim=dim), lambda m, env, a: m(a), lambda ins, ref: f"{ref}({ins[0]})",
                   f"nn.Softmax(dim={dim})")


def _lower_drop_path(ctx: LowerContext) -> Lowered:
    prob = float(ctx.node.params["prob"].value)  # type: ignore[union-attr]
    return Lowered(lambda: DropPath(prob), lambda m, env, a: m(a), lambda ins, ref: f"{ref}({ins[0]})", f"DropPath({prob})")


def _lower_zero(ctx: LowerContext) -> Lowered:
    return Lowered(None, lambda m, env, a: torch.zeros_like(a), lambda ins, ref: f"torch.zeros_like({ins[0]})")


def _lower_add(ctx: LowerContext) -> Lowered:
    return Lowered(None, lambda m, env, *xs: functools.reduce(operator.add, xs), lambda ins, ref: " + ".join(ins))


def _lower_mul(ctx: LowerContext) -> Lowered:
    return Lowered(None, lambda m, env, *xs: functools.reduce(operator.mul, xs), lambda ins, ref: " * ".join(ins))


def _lower_matmul(ctx: LowerContext) -> Lowered:
    if ctx.facts().get("swapped"):
        return Lowered(None, lambda m, env, a, b: torch.matmul(b, a), lambda ins, ref: f"torch.matmul({ins[1]}, {ins[0]})")
    return Lowered(None, lambda m, env, a, b: torch.matmul(a, b), lambda ins, ref: f"torch.matmul({ins[0]}, {ins[1]})")


def _lower_concat(ctx: LowerContext) -> Lowered:
    dim = constant_int(ctx.node.params["dim"])
    return Lowered(None, lambda m, env, *xs: torch.cat(xs, dim=dim), lambda ins, ref: f"torch.cat([{', '.join(ins)}], dim={dim})")


def _axes(node: Node) -> tuple[int, ...]:
    value = node.params["dim"]
    items = value.items if isinstance(value, TupleValue) else (value,)
    return tuple(constant_int(i) for i in items)  # type: ignore[misc]


def _reduction(fn: Callable, name: str) -> Callable[[LowerContext], Lowered]:
    def lower(ctx: LowerContext) -> Lowered:
        axes = _axes(ctx.node)
        return Lowered(None, lambda m, env, a: fn(a, dim=axes, keepdim=True),
                       lambda ins, ref: f"torch.{name}({ins[0]}, dim={axes}, keepdim=True)")
    return lower


def _lower_permute(ctx: LowerContext) -> Lowered:
    dims = tuple(constant_int(v) for v in ctx.node.params["dims"].items)  # type: ignore[union-attr]
    return Lowered(None, lambda m, env, a: a.permute(*dims), lambda ins, ref: f"{ins[0]}.permute{dims}")


def _python(expr, top: bool = True) -> str:
    """A size expression as integer Python (`/` is exact where the block verifies, so `//` computes it)."""
    if isinstance(expr, Num):
        return str(expr.value)
    if isinstance(expr, Sym):
        return expr.name
    if isinstance(expr, Neg):
        return "-" + _python(expr.operand, False)
    op = "//" if expr.op in ("/", "//") else expr.op
    text = f"{_python(expr.lhs, False)} {op} {_python(expr.rhs, False)}"
    return text if top else f"({text})"


def _size_fn(values: Sequence) -> tuple[Callable[[Mapping[str, int]], tuple[int, ...]], str]:
    """The sizes as written, evaluated with the input's B, H, W when the block runs (as NADER's code does):
    the module then computes what the block says at every input size, not only in the verified domain."""
    def evaluate(env: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(int(evaluate_expr(v, env)) for v in values)
    return evaluate, "(" + ", ".join(_python(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _lower_repeat(ctx: LowerContext) -> Lowered:
    evaluate, text = _size_fn(ctx.node.params["sizes"].items)  # type: ignore[union-attr]
    return Lowered(None, lambda m, env, a: a.repeat(*evaluate(env)), lambda ins, ref: f"{ins[0]}.repeat(*{text})")


def _lower_reshape(ctx: LowerContext) -> Lowered:
    evaluate, text = _size_fn(ctx.node.params["shape"].items)  # type: ignore[union-attr]
    return Lowered(None, lambda m, env, a: a.reshape(evaluate(env)), lambda ins, ref: f"{ins[0]}.reshape({text})")


LOWERINGS: dict[Op, Callable[[LowerContext], Lowered]] = {
    Op.CONV2D: _lower_conv,
    Op.LINEAR: _lower_linear,
    Op.AVG_POOL2D: _lower_pool,
    Op.MAX_POOL2D: _lower_pool,
    Op.ADAPTIVE_AVG_POOL2D: _lower_adaptive,
    Op.ADAPTIVE_MAX_POOL2D: _lower_adaptive,
    Op.RELU: _simple_module(nn.ReLU, "nn.ReLU()"),
    Op.GELU: _lower_gelu,
    Op.SIGMOID: _simple_module(nn.Sigmoid, "nn.Sigmoid()"),
    Op.BN: _lower_bn,
    Op.LN: _lower_ln,
    Op.ADD: _lower_add,
    Op.MUL: _lower_mul,
    Op.MATMUL: _lower_matmul,
    Op.CONCAT: _lower_concat,
    Op.MEAN: _reduction(torch.mean, "mean"),
    Op.MAX: _reduction(torch.amax, "amax"),
    Op.SUM: _reduction(torch.sum, "sum"),
    Op.SOFTMAX: _lower_softmax,
    Op.PERMUTE: _lower_permute,
    Op.REPEAT: _lower_repeat,
    Op.RESHAPE: _lower_reshape,
    Op.DROP_PATH: _lower_drop_path,
    Op.ZERO: _lower_zero,
}
