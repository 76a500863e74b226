"""Symbolic shape inference (NAD3xx), written as an interpreter over the block.

Each operation has a shape rule in `SHAPE_RULES`, keyed by `Op`; the
interpreter walks the live nodes in topological order and stores every node's
shape (a tuple of `Poly` sizes in `B C dim H W`) and facts the backends need
(for example whether a `multiply` runs with swapped operands). Verdicts hold
for every size of the domain (`contract.py`: square inputs by default): where a
block is valid only for some widths, the pass records the constraint
(`C % 4 == 0`) instead of guessing at one sample size.

The codes live in `shape_codes.py`; the checks of the sizes as a whole (can the
constraints be met, can the tensors be built) in `size_checks.py`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping, Optional

from nader.dsl.diagnostics import Code, DiagnosticSink, Label
from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue, Value, constant_int
from nader.dsl.ir import Block, Node, Role
from nader.dsl.ops import Op
from nader.dsl.span import Span

from .contract import SQUARE, Contract, Domain, contract
from .shape_codes import (AXIS_OUT_OF_RANGE, BAD_PERMUTE, BAD_REPEAT, BROADCAST_MISMATCH, CONCAT_MISMATCH, CONTRACT, GROUPS,
                          LAYER_SIZE_DEPENDS, MATMUL_MISMATCH, MATMUL_SWAPPED, NON_POSITIVE, NOT_WHOLE, RANK_MISMATCH,
                          RESHAPE_COUNT, RESOLUTION_BOUND)
from .shape_codes import SIZE_LIMIT, UNSATISFIABLE  # noqa: F401 (the size checks' codes, importable from here too)
from .size_checks import Limits, check_constraints, check_limits, int_pair
from .structure import dead_nodes, graph_facts
from .symbolic import (ONE, Constraint, Poly, assume_exact, ceil_div, exact_quotient, floor_div, integer_constraint,
                       product)

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
    sh, sw = int_pair(node.params["stride"])
    return (x[0], out, ceil_div(x[2], sh), ceil_div(x[3], sw))


def _rule_pool(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, node.op_name)
    sh, sw = int_pair(node.params["stride"])
    return (x[0], x[1], ceil_div(x[2], sh), ceil_div(x[3], sw))


def _rule_adaptive_pool(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, node.op_name)
    oh, ow = int_pair(node.params["output_size"])
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
        check_constraints(block, result, sink)
        check_limits(block, result, sink, limits)
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
