"""PyTorch backend: build an `nn.Module` straight from the IR, or emit standalone source.

Both follow docs/semantics.md and one lowering table, `LOWERINGS`, keyed by
`Op`: each entry turns a node (with its verified input shapes and concrete
channel sizes) into a `Lowered` value holding the leaf module (if the op has
weights or thop counts it), the call the forward pass makes, and the line of
Python that `--emit torch` writes for it (`block_source`; the file around it,
prelude and all, is `network_source.emit`'s). Nothing is `exec`ed: the built
module calls the same closures the source text describes.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import torch
from torch import nn

from nader.dsl.expr import Neg, Num, Sym, TupleValue, constant_int
from nader.dsl.expr import evaluate as evaluate_expr
from nader.dsl.ir import Block, Node, NodeId, Role, id_token
from nader.dsl.ops import Group, Op
from nader.compiler.backends.source_checks import check_lines
from nader.compiler.errors import BuildError
from nader.compiler.passes.cost import has_bias
from nader.compiler.passes.shapes import evaluate_shape
from nader.compiler.passes.symbolic import Poly, to_python
from nader.compiler.passes.verify import BlockReport, verify_block


class BlockRuntimeError(RuntimeError):
    """A node failed while running; the message names the `.nad` line it comes from."""


# The helpers the forward pass calls live in torch_support, which generated files copy (torch_source.py).
from nader.compiler.backends.torch_support import DropPath, crop_same, require_4d  # noqa: E402


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


# -- building -------------------------------------------------------------------------

@dataclass
class Step:
    node_id: NodeId
    lowered: Lowered
    inputs: tuple[NodeId, ...]
    where: str  # "file:line: node 3 (`BN`)"


class BlockModule(nn.Module):
    """One block as a module; `forward` takes the block's inputs in terminal order."""

    def __init__(self, block: Block, report: BlockReport, in_channels: int, out_channels: int,
                 input_size: Optional[int] = None):
        super().__init__()
        self.block_name = block.name
        self.role = report.role
        self.in_channels, self.out_channels = in_channels, out_channels
        self.input_size = input_size  # the resolution resolution-bound layers are built for
        self.report = report
        self.layers = nn.ModuleDict()
        shapes = report.shapes
        sizes = dict(shapes.sizes(in_channels, height=input_size or 32, out_width=out_channels,
                                  in_channels=in_channels))
        ctx = LowerContext(block, report, sizes)
        nodes = block.node_map()
        order = shapes.order  # dead nodes are dropped
        input_ops = list(shapes.contract.inputs)
        self.input_ids = [next(n.id for n in block.nodes if n.op is op) for op in input_ops]
        self.steps: list[Step] = []
        self.output_id = -1
        for node_id in order:
            node = nodes[node_id]
            if node.op in Group.SOURCE:
                continue
            if node.op is Op.OUTPUT:
                self.output_id = block.inputs_of(node_id)[0]
                continue
            ctx.node = node
            lowered = LOWERINGS[node.op](ctx)  # type: ignore[index]
            if lowered.make is not None:
                self.layers[f"n{id_token(node_id)}"] = lowered.make()
            where = f"{report.file}:{node.span.line}: node {node_id} (`{node.op_name}`)"
            self.steps.append(Step(node_id, lowered, tuple(block.inputs_of(node_id)), where))
        self._env_static = {"C": sizes["C"], "dim": sizes["dim"]}

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        if len(inputs) != len(self.input_ids):
            raise TypeError(f"block {self.block_name} takes {len(self.input_ids)} inputs, got {len(inputs)}")
        first = inputs[0]
        env = dict(self._env_static)
        if first.dim() == 4:
            env.update(B=first.shape[0], H=first.shape[2], W=first.shape[3])
        values = dict(zip(self.input_ids, inputs))
        layers = self.layers
        for step in self.steps:
            module = layers[f"n{id_token(step.node_id)}"] if step.lowered.make is not None else None
            try:
                values[step.node_id] = step.lowered.call(module, env, *[values[i] for i in step.inputs])
            except RuntimeError as error:
                raise BlockRuntimeError(f"{step.where}: {error}") from error
        return values[self.output_id]

    def extra_repr(self) -> str:
        size = f", H=W={self.input_size}" if self.input_size else ""
        return f"block={self.block_name}, role={self.role}, C={self.in_channels}, dim={self.out_channels}{size}"


def _default_out(report: BlockReport, in_channels: int) -> Optional[int]:
    env_dim = report.shapes.contract.env["dim"]
    if report.role is Role.STEM:
        return None
    return int(env_dim.evaluate({"C": in_channels}))


def build_torch(block: Block, in_channels: int, out_channels: Optional[int] = None, *, role: Optional[Role] = None,
                stem_stride: int = 1, report: Optional[BlockReport] = None,
                input_size: Optional[int] = None) -> BlockModule:
    """Build the block as an nn.Module for input width `in_channels` (stem: output width `out_channels`).

    `input_size` is the input's resolution (H = W): a block with resolution-bound layers (NAD317)
    needs it, and only runs at that size; a report verified at a fixed resolution implies it.
    """
    report = report or verify_block(block, role=role, stem_stride=stem_stride)
    if not report.ok:
        errors = [d for d in report.diagnostics if d.is_error]
        first = errors[0] if errors else None
        where = f"{first.file}:{first.span.line}:{first.span.col}: " if first else ""
        raise BuildError(f"block {block.name} does not verify: {where}{first.message if first else 'unknown error'}", errors)
    expected = _default_out(report, in_channels)
    if report.role is Role.STEM:
        if out_channels is None:
            raise BuildError(f"stem {block.name} needs out_channels (the first stage's width)")
        if in_channels != 3:
            raise BuildError(f"stem {block.name} takes 3 input channels, not {in_channels}")
    elif out_channels is not None and out_channels != expected:
        raise BuildError(f"a {report.role} block with C={in_channels} outputs {expected} channels, not {out_channels}")
    out = out_channels if out_channels is not None else expected
    fixed_size = report.domain.size
    if fixed_size is not None and input_size is not None and input_size != fixed_size:
        raise BuildError(f"block {block.name} was verified at {fixed_size}x{fixed_size}, not {input_size}x{input_size}")
    input_size = input_size or fixed_size
    bound = report.shapes.resolution_bound
    if bound and input_size is None:
        raise BuildError(f"block {block.name} is tied to its input resolution (node {bound[0]} learns over a spatial "
                         f"axis, NAD317): give the input size it is built for")
    sizes = report.shapes.sizes(in_channels, height=input_size or 32, out_width=out, in_channels=in_channels)
    known = {"C", "dim", "H", "W"} if input_size else {"C", "dim"}
    width_constraints = [c for c in report.shapes.constraints if c.size.free_symbols() <= known]
    broken = [str(c) for c in width_constraints if not c.holds(sizes)]
    if broken:
        at = f" and H=W={input_size}" if input_size else ""
        raise BuildError(f"block {block.name} cannot be built at C={sizes['C']}, dim={sizes['dim']}{at}: "
                         f"it requires {', '.join(broken)}")
    return BlockModule(block, report, in_channels, out, input_size)  # type: ignore[arg-type]


# -- standalone source ------------------------------------------------------------------

def _class_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name)
    return cleaned if cleaned[:1].isalpha() else f"Block_{cleaned}"


def block_source(block: Block, report: BlockReport, class_name: Optional[str] = None,
                 input_size: Optional[int] = None) -> str:
    """Python source of one class `Name(nn.Module)` with `__init__(self, C, dim)`; state_dict keys match BlockModule.

    A block with resolution-bound layers (NAD317) takes its input resolution too, `H` (keyword,
    default `input_size` when given): the layers are built for it.
    """
    class_name = class_name or _class_name(block.name)
    shapes = report.shapes
    nodes = block.node_map()
    order = shapes.order  # dead nodes are dropped
    file = report.file
    sizes = dict(shapes.sizes(64, out_width=64 if report.role is Role.STEM else None))
    ctx = LowerContext(block, report, sizes)
    inputs = [next(n.id for n in block.nodes if n.op is op) for op in shapes.contract.inputs]
    dim_default = {Role.BASE: "C", Role.CELL: "C", Role.REDUCTION_CELL: "C", Role.DOWNSAMPLE: "2 * C"}.get(report.role)
    resolution = ""
    if shapes.resolution_bound and report.domain.size is None:
        resolution = f", *, H={input_size}" if input_size else ", *, H"
    init = [f"class {class_name}(nn.Module):",
            f'    """Block {block.name} ({report.role}) from {file}; generated by nadc."""', "",
            f"    def __init__(self, C{', dim=None' if dim_default else ', dim'}{resolution}):",
            "        super().__init__()"]
    if report.role is Role.STEM:
        init.append("        C = 3")
    else:
        init.append(f"        dim = {dim_default} if dim is None else dim")
    height = "H" if resolution else (str(report.domain.size) if report.domain.size is not None else None)
    init.extend(check_lines(block.name, shapes.constraints, height))
    init.append("        self.layers = nn.ModuleDict()")
    args = ", ".join(f"x{id_token(i)}" for i in inputs)
    first = f"x{id_token(inputs[0])}"
    fwd = ["", f"    def forward(self, {args}):", f"        B, H, W = {first}.shape[0], {first}.shape[2], {first}.shape[3]",
           "        C, dim = self.C, self.dim"]
    init_tail = ["        self.C, self.dim = C, dim"]
    result = None
    for node_id in order:
        node = nodes[node_id]
        if node.op in Group.SOURCE:
            continue
        comment = f"  # {file}:{node.span.line}  {node.source_text()}"
        if node.op is Op.OUTPUT:
            result = block.inputs_of(node_id)[0]
            fwd.append(f"        return x{id_token(result)}{comment}")
            continue
        ctx.node = node
        lowered = LOWERINGS[node.op](ctx)  # type: ignore[index]
        ref = f"self.layers['n{id_token(node_id)}']"
        if lowered.module_source:
            init.append(f"        {ref} = {lowered.module_source}{comment}")
        names = [f"x{id_token(i)}" for i in block.inputs_of(node_id)]
        target = f"x{id_token(node_id)}"
        for k, piece in enumerate(_pieces(node.op, names, target)):
            fwd.append(f"        {target} = {lowered.source(piece, ref)}{comment if k == 0 else ''}")
    return "\n".join(init + init_tail + fwd) + "\n"


#: Most inputs one generated expression takes: `a + b + ...` nests one level per term, and Python's
#: compiler refuses an expression nested a few thousand levels deep (RecursionError).
PIECE = 64
#: Operations that may be applied in pieces: f(f(a, b), c) is f(a, b, c) (declared in the registry),
#: so folding them in pieces gives the same values, in the same order of operations, as one call.
FOLDABLE = Group.FOLDABLE


def _pieces(op: Op, names: list[str], target: str) -> list[list[str]]:
    """The inputs of each statement computing a node: all of them at once, or, past PIECE, the first
    PIECE and then the running result followed by the next PIECE - 1 (`x = a + ... ; x = x + ...`)."""
    if len(names) <= PIECE or op not in FOLDABLE:
        return [names]
    pieces = [names[:PIECE]]
    for start in range(PIECE, len(names), PIECE - 1):
        pieces.append([target, *names[start:start + PIECE - 1]])
    return pieces
