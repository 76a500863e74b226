"""Symbolic shape inference (NAD3xx), written as an interpreter over the block.

Each operation has a shape rule in `SHAPE_RULES`, keyed by `Op`; the
interpreter walks the live nodes in topological order and stores every node's
shape (a tuple of `Poly` sizes in `B C dim H W`) and facts the backends need
(for example whether a `multiply` runs with swapped operands). Verdicts hold
for every size of the domain (`contract.py`: square inputs by default): where a
block is valid only for some widths, the pass records the constraint
(`C % 4 == 0`) instead of guessing at one sample size.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping, Optional

from nader.dsl.diagnostics import Code, DiagnosticSink, Label, Severity, define_code
from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue, Value, constant_int
from nader.dsl.ir import Block, Node, Role
from nader.dsl.ops import Op
from nader.dsl.span import Span

from .contract import SQUARE, Contract, Domain, contract
from .structure import dead_nodes, graph_facts
from .symbolic import (ONE, Constraint, Poly, assume_exact, ceil_div, exact_quotient, floor_div, integer_constraint,
                       product)

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


def _operand_labels(ctx: "ShapeContext", pairs) -> tuple[Label, ...]:
    """Secondary labels on the node lines of the operands that disagree: (node id, shape) pairs."""
    labels = []
    for node_id, shape in pairs:
        node = ctx.block.node(node_id)
        if node is not None:
            labels.append(Label(node.span, f"node {node_id} gives {shape_str(shape)}"))
    return tuple(labels)


class ShapeError(Exception):
    def __init__(self, code: Code, message: str, help: Optional[str] = None, span: Optional[Span] = None,
                 labels: tuple[Label, ...] = ()):
        super().__init__(message)
        self.code, self.message, self.help, self.span, self.labels = code, message, help, span, labels


Shape = tuple  # tuple[Poly, ...]


def shape_str(shape: Shape) -> str:
    return "(" + ",".join(str(s) for s in shape) + ")"


@dataclass(frozen=True)
class Limits:
    max_elements: int = 1 << 24  # per tensor, one sample, at the reference size
    max_weights: int = 1 << 26  # per layer
    reference: Mapping[str, int] = field(default_factory=lambda: {"B": 1, "C": 64, "dim": 64, "H": 32, "W": 32})


@dataclass
class ShapeResult:
    role: Role
    contract: Contract
    shapes: dict[int, Shape] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    facts: dict[int, dict] = field(default_factory=dict)  # per node: e.g. {"swapped": True}
    failed: bool = False
    domain: Domain = SQUARE
    order: list = field(default_factory=list)  # the live nodes (dead ones dropped), in topological order

    @property
    def resolution_bound(self) -> list:
        """Nodes whose layer learns over a spatial size: the block must be built for its input resolution."""
        return [i for i, f in self.facts.items() if f.get("resolution_bound")]

    def input_shapes(self, block: Block, node_id: int) -> list[Shape]:
        return [self.shapes[i] for i in block.inputs_of(node_id)]

    def sizes(self, width: int, height: int = 32, batch: int = 2, out_width: Optional[int] = None,
              in_channels: Optional[int] = None) -> dict[str, int]:
        """Concrete symbol values for a block of input width `width` (stem: output width)."""
        sizes = {"B": batch, "H": height, "W": height}
        if self.role is Role.STEM:
            sizes.update(C=in_channels or 3, dim=out_width or width)
        else:
            sizes.update(C=width, dim=out_width or int(self.contract.env["dim"].evaluate({"C": width})))
        return sizes

    def satisfied(self, sizes: Mapping[str, int]) -> bool:
        return all(c.holds(sizes) for c in self.constraints)


def evaluate_shape(shape: Shape, sizes: Mapping[str, int]) -> tuple[int, ...]:
    out = []
    for s in shape:
        v = s.evaluate(sizes)
        out.append(int(v) if v.denominator == 1 else float(v))
    return tuple(out)


# -- the interpreter ---------------------------------------------------------------

class ShapeContext:
    """What a shape rule sees: the node, the symbol bindings, and where constraints go."""

    def __init__(self, block: Block, result: ShapeResult):
        self.block = block
        self.result = result
        self.env = result.contract.env
        self.node: Node = None  # type: ignore[assignment]
        self._seen_constraints: set[tuple] = set()
        self.warnings: list[tuple[Code, str, str]] = []  # of the current node's rule

    # -- sizes from expressions ----------------------------------------------------
    def size(self, value: Value, what: str) -> Poly:
        if isinstance(value, TupleValue):
            raise ShapeError(NOT_WHOLE, f"{what} must be a single size, not `{value}`", span=self._span(what))
        return self._expr(value, what)

    def _expr(self, e, what: str) -> Poly:
        if isinstance(e, Num):
            if isinstance(e.value, float):
                raise ShapeError(NOT_WHOLE, f"{what} must be a whole number, not `{e.value}`", span=self._span(what))
            return Poly.const(e.value)
        if isinstance(e, Sym):
            return self.env[e.name]
        if isinstance(e, Neg):
            return -self._expr(e.operand, what)
        if isinstance(e, BinOp):
            lhs, rhs = self._expr(e.lhs, what), self._expr(e.rhs, what)
            if e.op == "+":
                return lhs + rhs
            if e.op == "-":
                return lhs - rhs
            if e.op == "*":
                return lhs * rhs
            if rhs.constant() == 0:
                raise ShapeError(NOT_WHOLE, f"division by zero in {what} `{e}`", span=self._span(what))
            if e.op == "/":
                quotient = exact_quotient(lhs, rhs)
                if quotient is None:
                    raise ShapeError(NOT_WHOLE, f"{what} `{e}` is not a whole size for all widths: {lhs} / {rhs}",
                                     "divide by a constant or by a size that divides it", self._span(what))
                self.require_integer(quotient, f"{what} `{e}`")
                return quotient
            k = rhs.int_constant()
            if k is not None and k > 0:
                if self._implied_divisible(lhs, k):
                    return lhs.scale(Fraction(1, k))
                return floor_div(lhs, k)
            quotient = exact_quotient(lhs, rhs)
            if quotient is None or not quotient.has_integer_coefficients():
                raise ShapeError(NOT_WHOLE, f"{what} `{e}` floor-divides by a non-constant size",
                                 "floor-divide by a positive constant", self._span(what))
            return quotient
        raise TypeError(e)

    def _span(self, what: str) -> Optional[Span]:
        if self.node is None:
            return None
        name = what.split("`")[1] if "`" in what else what
        return self.node.arg_span(name)

    # -- constraints ---------------------------------------------------------------
    def add_constraint(self, c: Constraint) -> None:
        key = (c.size, c.modulus)
        if key not in self._seen_constraints:
            self._seen_constraints.add(key)
            self.result.constraints.append(c)

    def require_integer(self, p: Poly, what: str) -> None:
        c = integer_constraint(p, what)
        if c is None:
            return
        if not c.size.free_symbols():
            raise ShapeError(NOT_WHOLE, f"{what} is {p}, not a whole number", span=self._span(what))
        self.add_constraint(c)

    def require_positive(self, p: Poly, what: str) -> None:
        value = p.constant()
        if value is not None:
            if value < 1:
                raise ShapeError(NON_POSITIVE, f"{what} is {p}; it must be at least 1", span=self._span(what))
            return
        if p.has_positive_coefficients():
            return  # positive and, under the integrality constraints, at least 1
        self.add_constraint(Constraint(p, 0, what))

    def require_divides(self, divisor: Poly, size: Poly, what: str) -> None:
        """divisor | size for all valid widths, or a constraint, or an error if never."""
        quotient = exact_quotient(size, divisor)
        if quotient is not None and quotient.has_integer_coefficients():
            return
        k = divisor.int_constant()
        if k is not None and k > 0:
            self.require_integer(size.scale(Fraction(1, k)), what)
            return
        if quotient is not None and quotient.constant() is not None:
            raise ShapeError(GROUPS, f"{what}: {divisor} never divides {size}", span=self._span("groups"))
        raise ShapeError(GROUPS, f"{what}: {divisor} does not divide {size} for all widths",
                         "use `groups` equal to the channel count, or a constant", self._span("groups"))

    def _implied_divisible(self, p: Poly, k: int) -> bool:
        """Whether the constraints so far make p a multiple of k (exact, by one period)."""
        symbols = p.free_symbols()
        if p.scale(Fraction(1, k)).has_integer_coefficients() and p.has_integer_coefficients():
            return True
        if len(symbols) != 1 or len(p.atoms()) != 1:
            return False
        (symbol,) = symbols
        related = [c for c in self.result.constraints if c.modulus and c.size.free_symbols() == symbols]
        if not related:
            return False
        period = k * p.denominator()
        for c in related:
            period = period * c.modulus // _gcd(period, c.modulus)
        if period > 100_000:
            return False
        found = False
        for x in range(1, period + 1):
            sizes = {symbol: x}
            if all(c.holds(sizes) for c in related):
                found = True
                value = p.evaluate(sizes)
                if value.denominator != 1 or value.numerator % k:
                    return False
        return found

    def same(self, p: Poly, q: Poly) -> bool:
        """p == q for all sizes, or for the sizes where the rounded divisions in them are exact (a constraint)."""
        if p == q:
            return True
        p_exact, p_needed = assume_exact(p)
        q_exact, q_needed = assume_exact(q)
        if not (p_needed or q_needed) or p_exact != q_exact:
            return False
        for inner, k in p_needed + q_needed:
            self.add_constraint(Constraint(inner, k, "rounded sizes must be exact"))
        return True

    # -- helpers for rules -----------------------------------------------------------
    def warn(self, code: Code, message: str, help: str) -> None:
        """A warning on the current node, emitted once the rule has succeeded."""
        self.warnings.append((code, message, help))

    def layer_axis(self, size: Poly, what: str) -> None:
        """The axis a layer learns over: never in B; in H or W, resolution-bound (or, in `any`, an error)."""
        free = size.free_symbols()
        channels_last = what.startswith(("`Linear`", "`LN`"))
        fix = ("`permute(0,2,3,1)` to channels-last before `Linear`/`LN`, and back after" if channels_last
               else "keep channels on axis 1 of a (B,C,H,W) tensor")
        if "B" in free:
            raise ShapeError(LAYER_SIZE_DEPENDS, f"{what} is `{size}`, which depends on the batch size B: the weights "
                                                 f"are made for one batch size, so the last, smaller batch of an epoch "
                                                 f"or an evaluation at another batch size would crash",
                             "keep the batch on an axis of its own (`reshape(B,...)`); " + fix)
        spatial = sorted(free & {"H", "W"})
        if not spatial:
            return
        names = ", ".join(spatial)
        if not self.result.domain.per_resolution:
            raise ShapeError(LAYER_SIZE_DEPENDS, f"{what} is `{size}`, which depends on {names}: in the `any` domain one "
                                                 f"module must run at every H and W",
                             fix + " (the default, square domain accepts it as a resolution-bound layer)")
        self.result.facts.setdefault(self.node.id, {})["resolution_bound"] = True
        square = " (square inputs: H = W)" if self.result.domain.name == "square" else ""
        self.warn(RESOLUTION_BOUND, f"{what} is `{size}`, a spatial size{square}: the block is tied to its input "
                                    f"resolution (each network stage builds this layer for its own size)",
                  "nothing to do if learning over a spatial axis is meant; else " + fix)

    def axis(self, value: int, rank: int, what: str) -> int:
        if not -rank <= value < rank:
            raise ShapeError(AXIS_OUT_OF_RANGE, f"{what} {value} is out of range for a {rank}-d input",
                             f"use an axis between {-rank} and {rank - 1}", self._span("dim"))
        return value % rank


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _pair(value: Value) -> tuple[int, int]:
    if isinstance(value, TupleValue):
        items = [constant_int(i) for i in value.items]
        return (items[0], items[-1]) if len(items) in (1, 2) else (items[0], items[1])  # type: ignore[return-value]
    v = constant_int(value)
    return v, v  # type: ignore[return-value]


def _spatial(ctx: ShapeContext, x: Shape, op: str) -> None:
    if len(x) != 4:
        raise ShapeError(RANK_MISMATCH, f"`{op}` takes a 4-d (B,C,H,W) tensor, got {len(x)}-d {shape_str(x)}",
                         "`permute`/`reshape` back to (B,C,H,W) first")


# -- shape rules, one per operation ------------------------------------------------------

def _rule_conv(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, "Conv2d")
    in_channels = x[1]
    ctx.layer_axis(in_channels, "`Conv2d` input channels (axis 1)")
    out = ctx.size(node.params["out_channels"], "`out_channels`")
    groups = ctx.size(node.params["groups"], "`groups`")
    ctx.require_positive(out, "`out_channels`")
    ctx.require_positive(groups, "`groups`")
    ctx.require_divides(groups, in_channels, "`groups` must divide the input channels")
    ctx.require_divides(groups, out, "`groups` must divide `out_channels`")
    ctx.result.facts.setdefault(node.id, {})["groups"] = groups
    sh, sw = _pair(node.params["stride"])
    return (x[0], out, ceil_div(x[2], sh), ceil_div(x[3], sw))


def _rule_pool(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, node.op_name)
    sh, sw = _pair(node.params["stride"])
    return (x[0], x[1], ceil_div(x[2], sh), ceil_div(x[3], sw))


def _rule_adaptive_pool(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, node.op_name)
    oh, ow = _pair(node.params["output_size"])
    return (x[0], x[1], Poly.const(oh), Poly.const(ow))


def _rule_linear(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    if not x:
        raise ShapeError(RANK_MISMATCH, "`Linear` needs at least a 1-d input")
    ctx.layer_axis(x[-1], "`Linear` input features (last axis)")
    out = ctx.size(node.params["out_channels"], "`out_channels`")
    ctx.require_positive(out, "`out_channels`")
    return x[:-1] + (out,)


def _rule_same(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    return xs[0]


def _rule_bn(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, "BN")
    ctx.layer_axis(x[1], "`BN` features (axis 1)")
    return x


def _rule_ln(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    if not x:
        raise ShapeError(RANK_MISMATCH, "`LN` needs at least a 1-d input")
    ctx.layer_axis(x[-1], "`LN` normalised axis (last axis)")
    return x


def _broadcast(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    result = xs[0]
    for index, x in enumerate(xs[1:], 1):
        rank = max(len(result), len(x))
        a = (ONE,) * (rank - len(result)) + tuple(result)
        b = (ONE,) * (rank - len(x)) + tuple(x)
        out = []
        for axis, (p, q) in enumerate(zip(a, b)):
            if q == ONE or ctx.same(p, q):
                out.append(p)
            elif p == ONE:
                out.append(q)
            else:
                sources = ctx.block.inputs_of(node.id)
                raise ShapeError(
                    BROADCAST_MISMATCH,
                    f"`{node.op_name}` inputs do not broadcast: {shape_str(result)} from node {sources[0]} and "
                    f"{shape_str(x)} from node {sources[index]} differ on axis {axis - rank + len(x) if len(x) == rank else axis} "
                    f"({p} vs {q})",
                    "make both inputs the same shape (e.g. a 1x1 Conv2d to match channels, the same stride to match H, W)",
                    labels=_operand_labels(ctx, [(sources[0], xs[0]), (sources[index], x)]))
        result = tuple(out)
    return result


def _rule_concat(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    rank = len(xs[0])
    axis = ctx.axis(constant_int(node.params["dim"]), rank, "`dim`")  # type: ignore[arg-type]
    sources = ctx.block.inputs_of(node.id)
    total = xs[0][axis]
    for index, x in enumerate(xs[1:], 1):
        if len(x) != rank:
            raise ShapeError(CONCAT_MISMATCH, f"`concat` inputs have different ranks: {shape_str(xs[0])} from node "
                                              f"{sources[0]} and {shape_str(x)} from node {sources[index]}")
        for k in range(rank):
            if k != axis and not ctx.same(x[k], xs[0][k]):
                raise ShapeError(CONCAT_MISMATCH,
                                 f"`concat` along axis {axis}: {shape_str(xs[0])} from node {sources[0]} and "
                                 f"{shape_str(x)} from node {sources[index]} differ on axis {k} ({xs[0][k]} vs {x[k]})",
                                 "make the other axes equal, or concatenate along the axis that differs",
                                 labels=_operand_labels(ctx, [(sources[0], xs[0]), (sources[index], x)]))
        total = total + x[axis]
    return tuple(total if k == axis else xs[0][k] for k in range(rank))


def _matmul_shape(a: Shape, b: Shape) -> Optional[Shape]:
    if not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return () if a[0] == b[0] else None
    squeeze_front = len(a) == 1
    squeeze_back = len(b) == 1
    a2 = (ONE,) + tuple(a) if squeeze_front else tuple(a)
    b2 = tuple(b) + (ONE,) if squeeze_back else tuple(b)
    if a2[-1] != b2[-2]:
        return None
    batch_a, batch_b = a2[:-2], b2[:-2]
    rank = max(len(batch_a), len(batch_b))
    pa = (ONE,) * (rank - len(batch_a)) + batch_a
    pb = (ONE,) * (rank - len(batch_b)) + batch_b
    batch = []
    for p, q in zip(pa, pb):
        if p == q or q == ONE:
            batch.append(p)
        elif p == ONE:
            batch.append(q)
        else:
            return None
    out = tuple(batch) + (a2[-2], b2[-1])
    if squeeze_front:
        out = out[:-2] + out[-1:]
    if squeeze_back:
        out = out[:-1]
    return out


def _rule_matmul(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    a, b = xs
    out = _matmul_shape(a, b)
    if out is not None:
        return out
    swapped = _matmul_shape(b, a)
    sources = ctx.block.inputs_of(node.id)
    if swapped is not None:
        ctx.result.facts.setdefault(node.id, {})["swapped"] = True
        raise _Warning(MATMUL_SWAPPED, f"`multiply` fits only as node {sources[1]} x node {sources[0]} "
                                       f"({shape_str(b)} x {shape_str(a)}), the reverse of the edge order",
                       "swap the order of the two edges into this node", swapped)
    raise ShapeError(MATMUL_MISMATCH, f"`multiply` of {shape_str(a)} (node {sources[0]}) and {shape_str(b)} "
                                      f"(node {sources[1]}) does not fit (..., n, k) x (..., k, m)",
                     "`permute` or `reshape` one operand so its inner size matches the other's",
                     labels=_operand_labels(ctx, [(sources[0], a), (sources[1], b)]))


class _Warning(Exception):
    def __init__(self, code: Code, message: str, help: str, shape: Shape):
        super().__init__(message)
        self.code, self.message, self.help, self.shape = code, message, help, shape


def _axes(ctx: ShapeContext, node: Node, rank: int) -> list[int]:
    value = node.params["dim"]
    items = value.items if isinstance(value, TupleValue) else (value,)
    axes = [ctx.axis(constant_int(i), rank, "`dim`") for i in items]  # type: ignore[arg-type]
    if len(set(axes)) != len(axes):
        raise ShapeError(AXIS_OUT_OF_RANGE, f"`dim` names an axis twice: {value}", "list each axis once", ctx._span("dim"))
    return axes


def _rule_reduce(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    if not x:
        raise ShapeError(RANK_MISMATCH, f"`{node.op_name}` needs at least a 1-d input")
    axes = _axes(ctx, node, len(x))
    return tuple(ONE if k in axes else s for k, s in enumerate(x))


def _rule_softmax(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    ctx.axis(constant_int(node.params["dim"]), max(len(x), 1), "`dim`")  # type: ignore[arg-type]
    return x


def _rule_permute(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    dims = [constant_int(v) for v in node.params["dims"].items]  # type: ignore[union-attr]
    rank = len(x)
    if len(dims) != rank or any(d is None or not -rank <= d < rank for d in dims) or \
            len({d % rank for d in dims}) != rank:  # type: ignore[operator]
        raise ShapeError(BAD_PERMUTE, f"`permute({','.join(map(str, dims))})` is not a permutation of the "
                                      f"{rank} axes of {shape_str(x)}",
                         f"name each of the axes 0..{rank - 1} once" + (", e.g. `permute(0,2,3,1)`" if rank == 4 else ""),
                         ctx._span("dims") if False else None)
    return tuple(x[d % rank] for d in dims)  # type: ignore[operator]


def _rule_repeat(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    sizes = [ctx.size(v, "`repeat` size") for v in node.params["sizes"].items]  # type: ignore[union-attr]
    if len(sizes) < len(x):
        raise ShapeError(BAD_REPEAT, f"`repeat` gives {len(sizes)} sizes for the {len(x)} axes of {shape_str(x)}",
                         "give one repeat count per axis (1 keeps an axis)")
    for s in sizes:
        value = s.constant()
        if value is not None and value < 1:
            raise ShapeError(BAD_REPEAT, f"`repeat` size {s} is below 1", "use counts of at least 1")
        ctx.require_positive(s, "`repeat` size")
    padded = (ONE,) * (len(sizes) - len(x)) + tuple(x)
    return tuple(p * s for p, s in zip(padded, sizes))


def _rule_reshape(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    entries = [ctx.size(v, "`reshape` size") for v in node.params["shape"].items]  # type: ignore[union-attr]
    total = product(x)
    minus = [k for k, e in enumerate(entries) if e.constant() == -1]
    if len(minus) > 1:
        raise ShapeError(RESHAPE_COUNT, "`reshape` has more than one -1", "keep at most one -1")
    for e in entries:
        c = e.constant()
        if c is not None and c != -1 and c < 1:
            raise ShapeError(NON_POSITIVE, f"`reshape` size {e} must be at least 1 (or -1)")
        if c is None:
            ctx.require_positive(e, "`reshape` size")
    known = product(e for e in entries if e.constant() != -1)
    target = f"reshape({','.join(str(e) for e in entries)})"
    if minus:
        inferred = exact_quotient(total, known)
        if inferred is None:
            raise ShapeError(RESHAPE_COUNT, f"`{target}` cannot infer -1: {total} elements of {shape_str(x)} are not "
                                            f"a multiple of {known} for all sizes",
                             "give the sizes so that the input's element count divides evenly")
        ctx.require_integer(inferred, "the -1 of `reshape`")
        ctx.require_positive(inferred, "the -1 of `reshape`")
        entries[minus[0]] = inferred
        return tuple(entries)
    if not ctx.same(known, total):
        raise ShapeError(RESHAPE_COUNT, f"`{target}` holds {known} elements but its input {shape_str(x)} holds {total}",
                         "make the product of the sizes equal the input's, or use -1 for one of them")
    return tuple(entries)


def _rule_output(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    expected = ctx.result.contract.output
    if len(x) != len(expected) or not all(ctx.same(a, b) for a, b in zip(x, expected)):
        role = ctx.result.role
        raise ShapeError(CONTRACT, f"a {role} block must output {shape_str(expected)}, but node "
                                   f"{ctx.block.inputs_of(node.id)[0]} gives {shape_str(x)}",
                         _contract_help(x, expected))
    return x


def _contract_help(got: Shape, expected: Shape) -> str:
    if len(got) != len(expected):
        return "`permute`/`reshape` back to (B,C,H,W) before output"
    if got[1] != expected[1]:
        return f"make the last layer's out_channels give {expected[1]} channels"
    return "adjust the strides: the output's spatial size must be " + ",".join(str(s) for s in expected[2:])


SHAPE_RULES: dict[Op, Callable[[ShapeContext, Node, list[Shape]], Shape]] = {
    Op.CONV2D: _rule_conv,
    Op.LINEAR: _rule_linear,
    Op.AVG_POOL2D: _rule_pool,
    Op.MAX_POOL2D: _rule_pool,
    Op.ADAPTIVE_AVG_POOL2D: _rule_adaptive_pool,
    Op.ADAPTIVE_MAX_POOL2D: _rule_adaptive_pool,
    Op.RELU: _rule_same,
    Op.GELU: _rule_same,
    Op.SIGMOID: _rule_same,
    Op.DROP_PATH: _rule_same,
    Op.ZERO: _rule_same,
    Op.BN: _rule_bn,
    Op.LN: _rule_ln,
    Op.ADD: _broadcast,
    Op.MUL: _broadcast,
    Op.MATMUL: _rule_matmul,
    Op.CONCAT: _rule_concat,
    Op.MEAN: _rule_reduce,
    Op.MAX: _rule_reduce,
    Op.SUM: _rule_reduce,
    Op.SOFTMAX: _rule_softmax,
    Op.PERMUTE: _rule_permute,
    Op.REPEAT: _rule_repeat,
    Op.RESHAPE: _rule_reshape,
    Op.OUTPUT: _rule_output,
}


# Successful rule applications, interned: a rule's result depends only on the node's arguments
# (the tuple parse_line shares between equal lines, kept alive here so its id stays unique),
# its input shapes, the role's contract and the constraints found before it. Errors are not
# cached: they carry spans. An entry is (args, shape, None or the rule's side effects: constraints
# added, facts, warnings). One table per contract (role, stem stride, domain: contracts are built
# once each), looked up once per block by the contract's identity, so the per-node key leaves it out.
_RULE_RESULTS: dict[int, tuple[Contract, dict[tuple, tuple]]] = {}


def _rule_results(of: Contract) -> dict[tuple, tuple]:
    hit = _RULE_RESULTS.get(id(of))
    if hit is None or hit[0] is not of or len(hit[1]) > 65_536:
        hit = _RULE_RESULTS[id(of)] = (of, {})
    return hit[1]


def infer_shapes(block: Block, role: Role, sink: DiagnosticSink, *, stem_stride: int = 1,
                 limits: Limits = Limits(), domain: Domain = SQUARE) -> ShapeResult:
    """Infer the shape of every live node in `domain`; the block must have passed the structure checks.

    Dead nodes (NAD206) are dropped when compiled, so they get no shape and no shape checks.
    """
    result = ShapeResult(role, contract(role, stem_stride, domain), domain=domain)
    ctx = ShapeContext(block, result)
    nodes = block.node_map()
    sources = block.input_map()
    shapes = result.shapes
    constraints = result.constraints
    terminals = result.contract.inputs
    dead = dead_nodes(block)
    order = result.order = block.topological_order() or []
    if dead:
        order[:] = [i for i in order if i not in dead]
    _prescan_sizes(ctx, block)
    rule_results = _rule_results(result.contract)
    for node_id in order:
        node = nodes[node_id]
        op = node.op
        if op in terminals:
            shapes[node_id] = terminals[op]
            continue
        inputs = tuple(map(shapes.get, sources.get(node_id, ())))
        if None in inputs:
            result.failed = True
            continue  # an upstream node failed; it was reported there
        key = (node.op_name, id(node.args), inputs, tuple(constraints))
        hit = rule_results.get(key)
        if hit is not None and hit[0] is node.args:
            shapes[node_id] = hit[1]
            if hit[2] is not None:
                added, facts, warnings = hit[2]
                for c in added:
                    ctx.add_constraint(c)
                if facts:
                    result.facts[node_id] = dict(facts)
                for code, message, help_text in warnings:
                    sink.emit(code, message, node.span, help_text, block.name)
            continue
        ctx.node = node
        before = len(constraints)
        ctx.warnings = []
        try:
            shape = SHAPE_RULES[op](ctx, node, inputs)  # type: ignore[arg-type,index]
            shapes[node_id] = shape
            for code, message, help_text in ctx.warnings:
                sink.emit(code, message, node.span, help_text, block.name)
            side_effects = (tuple(constraints[before:]), dict(result.facts.get(node_id, {})), tuple(ctx.warnings))
            rule_results[key] = (node.args, shape, side_effects if any(side_effects) else None)
        except _Warning as warning:
            sink.emit(warning.code, warning.message, node.span, warning.help, block.name)
            shapes[node_id] = warning.shape
        except ShapeError as error:
            result.failed = True
            sink.emit(error.code, error.message, error.span or node.span, error.help, block.name, error.labels)
    if not result.failed:
        _check_constraints(block, result, sink)
        _check_limits(block, result, sink, limits)
    return result


def _prescan_sizes(ctx: ShapeContext, block: Block) -> None:
    """Collect exact-division constraints first, so `//` simplifies the same whatever the line order."""
    from nader.dsl.ops import ParamKind
    if not graph_facts(block).floordiv:
        return  # only `//` depends on constraints found elsewhere in the block
    for node in block.nodes:
        d = node.opdef
        if d is None:
            continue
        ctx.node = node
        for p in d.params:
            if p.kind not in (ParamKind.SIZE, ParamKind.SHAPE) or p.name not in node.params:
                continue
            value = node.params[p.name]
            for item in (value.items if isinstance(value, TupleValue) else (value,)):
                try:
                    ctx.size(item, f"`{p.name}`")
                except (ShapeError, KeyError, TypeError):
                    pass  # reported when the node's rule runs
    ctx.node = None  # type: ignore[assignment]


# Values scanned to decide whether constraints can be met at all.
_SCAN = {"C": range(1, 513), "dim": range(1, 513), "H": range(1, 65), "W": range(1, 65), "B": range(1, 5)}


def _check_constraints(block: Block, result: ShapeResult, sink: DiagnosticSink) -> None:
    if not result.constraints:
        return
    key = tuple((c.size, c.modulus) for c in result.constraints)
    satisfiable = _SATISFIABLE.get(key)
    if satisfiable is None:
        if len(_SATISFIABLE) > 65_536:
            _SATISFIABLE.clear()
        satisfiable = _SATISFIABLE[key] = _satisfiable(result.constraints)
    if satisfiable:
        return
    sink.emit(UNSATISFIABLE, "no width satisfies the constraints " + "; ".join(str(c) for c in result.constraints),
              block.header_span, "relax one of them, e.g. choose `groups` that divides the channel count", block.name)
    result.failed = True


# Whether some sizes meet a set of constraints, by their sizes and moduli (what `holds` reads).
_SATISFIABLE: dict[tuple, bool] = {}


def _satisfiable(constraints: list[Constraint]) -> bool:
    """True where some scanned sizes meet every constraint, or where there are too many to scan."""
    symbols = sorted(set().union(*(c.size.free_symbols() for c in constraints)))
    ranges = [_SCAN.get(s, range(1, 33)) for s in symbols]
    budget = 200_000
    for values in itertools.product(*ranges):
        budget -= 1
        if budget < 0:
            return True  # too many combinations to scan: keep the constraints, do not guess
        sizes = dict(zip(symbols, values))
        if all(c.holds(sizes) for c in constraints):
            return True
    return False


# Values at a reference, by reference: {shape: element count} and {size: value}. The same sizes
# and shapes recur across blocks; one table per reference keeps the lookups to the shape or size.
_AT_REFERENCE: dict[tuple, tuple[dict, dict]] = {}


def _reference_tables(key: tuple) -> tuple[dict, dict]:
    tables = _AT_REFERENCE.get(key)
    if tables is None or len(tables[0]) + len(tables[1]) > 200_000:
        tables = _AT_REFERENCE[key] = ({}, {})
    return tables


def _at_reference(size: Poly, sizes: Mapping[str, int], values: dict) -> int:
    value = values.get(size)
    if value is None:
        value = values[size] = int(size.evaluate(sizes))
    return value


def _count_at_reference(shape: Shape, sizes: Mapping[str, int], values: dict) -> int:
    count = 1
    for s in shape:
        count *= max(_at_reference(s, sizes, values), 0)
    return count


# The axis of a layer's input and output whose sizes its weights span (with the kernel's area).
_WEIGHT_AXIS = {Op.CONV2D: 1, Op.LINEAR: -1}


# The reference sizes of a contract under some limits, by the identities of both (kept alive in the entry).
_REFERENCES: dict[tuple, tuple] = {}


def _reference_sizes(result: ShapeResult, limits: Limits) -> tuple[dict[str, int], tuple]:
    """The sizes, and them as a table key."""
    key = (id(result.contract), id(limits))
    hit = _REFERENCES.get(key)
    if hit is None or hit[0] is not result.contract or hit[1] is not limits:
        sizes = dict(limits.reference)
        if result.role is Role.STEM:
            sizes["C"] = 3
        else:
            sizes["dim"] = int(result.contract.env["dim"].evaluate(sizes))
        if len(_REFERENCES) > 1024:
            _REFERENCES.clear()
        hit = _REFERENCES[key] = (result.contract, limits, sizes, tuple(sorted(sizes.items())))
    return hit[2], hit[3]


def _check_limits(block: Block, result: ShapeResult, sink: DiagnosticSink, limits: Limits) -> None:
    sizes, key = _reference_sizes(result, limits)
    counts, values = _reference_tables(key)
    if not _within_limits(block, result, sizes, counts, values, limits):
        _report_limits(block, result, sink, limits, sizes, counts, values)


def _within_limits(block: Block, result: ShapeResult, sizes: Mapping[str, int], counts: dict, values: dict,
                   limits: Limits) -> bool:
    """Whether every tensor and layer is within the limits (most blocks): no walk node by node.

    False also where a size cannot be evaluated; `_report_limits` then decides as it walks.
    """
    shapes = result.shapes
    known = list(map(counts.get, shapes.values()))
    if None in known:
        return False  # a shape not counted yet: the walk counts it
    if max(known, default=0) > limits.max_elements:
        return False
    nodes, sources = block.node_map(), block.input_map()
    value_of = values.get
    for node_id in graph_facts(block).layers:
        shape = shapes.get(node_id)
        if shape is None:
            continue  # a dead node
        node = nodes[node_id]
        axis = _WEIGHT_AXIS[node.op]
        inputs = sources.get(node_id)
        if not inputs:
            continue
        fan_in, out = value_of(shapes[inputs[0]][axis]), value_of(shape[axis])
        if fan_in is None or out is None:
            return False  # a size not evaluated yet: the walk evaluates it
        kh, kw = _kernel(node.params["kernel_size"]) if axis == 1 else (1, 1)
        if fan_in * out * kh * kw > limits.max_weights:
            return False
    return True


# Kernel sizes by the identity of the value, which equal node lines share (kept alive in the entry).
_KERNELS: dict[int, tuple] = {}


def _kernel(value: Value) -> tuple[int, int]:
    hit = _KERNELS.get(id(value))
    if hit is None or hit[0] is not value:
        if len(_KERNELS) > 4096:
            _KERNELS.clear()
        hit = _KERNELS[id(value)] = (value, _pair(value))
    return hit[1]


def _report_limits(block: Block, result: ShapeResult, sink: DiagnosticSink, limits: Limits,
                   sizes: Mapping[str, int], counts: dict, values: dict) -> None:
    """Walks the nodes in order and reports the first tensor or layer past the limits."""
    nodes = block.node_map()
    sources = block.input_map()
    shapes = result.shapes
    max_elements = limits.max_elements
    for node_id, shape in shapes.items():
        count = counts.get(shape)  # looked up here: most shapes were counted before (a hot loop)
        if count is None:
            try:
                count = counts[shape] = _count_at_reference(shape, sizes, values)
            except (KeyError, ZeroDivisionError):
                continue
        if count > max_elements:
            node = nodes[node_id]
            sink.emit(SIZE_LIMIT, f"node {node_id} (`{node.op_name}`) produces {count:,} elements per sample at "
                                  f"C={sizes['C']}, H=W={sizes['H']}, past the limit of {limits.max_elements:,}",
                      node.span, "use smaller channel multipliers or repeat counts", block.name)
            result.failed = True
            return
        node = nodes[node_id]
        if node.op is Op.CONV2D or node.op is Op.LINEAR:
            inputs = sources.get(node_id)
            if not inputs:
                continue
            x = shapes[inputs[0]]
            try:
                fan_in = _at_reference(x[1 if node.op is Op.CONV2D else -1], sizes, values)
                out = _at_reference(shape[1 if node.op is Op.CONV2D else -1], sizes, values)
            except (KeyError, ZeroDivisionError):
                continue
            kh, kw = _pair(node.params["kernel_size"]) if node.op is Op.CONV2D else (1, 1)
            weights = fan_in * out * kh * kw
            if weights > limits.max_weights:
                sink.emit(SIZE_LIMIT, f"node {node_id} (`{node.op_name}`) has {weights:,} weights at C={sizes['C']}, "
                                      f"past the limit of {limits.max_weights:,}",
                          node.span, "use smaller channel multipliers", block.name)
                result.failed = True
                return
