"""Analytic cost model: parameters, FLOPs and multiply-accumulates from the IR.

Costs are computed from a verified block's symbolic shapes (`ShapeResult`),
never by building a PyTorch module. Each operation has a rule in
`COST_RULES`, keyed by `Op`; a rule returns the node's cost as exact
polynomials (`Poly`) in `B C dim H W`, so one block cost serves every width and
resolution, and a whole network's cost is a polynomial in its base width.

Three figures per node (see docs/networks.md for the full table):

* `params`: trainable parameters, exactly `sum(p.numel())` of the built module.
* `flops`: thop 0.1.1 `profile` convention, which NADER reports as FLOPs (it
  counts multiply-accumulates for convolutions and linears, 4 per element for
  affine normalisation, one per output element for average pooling, nothing
  for activations, max pooling and functional operations). Convolutions and
  pools are counted on the *uncropped* output of the padded layer, as thop sees
  the `nn.Conv2d` / `nn.AvgPool2d` inside the backend's "same"-padding module.
* `macs`: plain multiply-accumulates of `Conv2d`, `Linear` and `multiply`
  (matmul), on the semantic (cropped) output sizes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Mapping

from nader.dsl.expr import TupleValue, Value, constant_int
from nader.dsl.ir import Block, Node
from nader.dsl.ops import Op

from .interpreter import Interpreter
from .shapes import ShapeContext, ShapeError, ShapeResult
from .symbolic import _DERIVED, ONE, ZERO, Poly, ceil_div, exact_quotient, floor_div, product

Shape = tuple  # tuple[Poly, ...]


class CostError(Exception):
    """A block whose cost cannot be stated (it should have failed verification)."""


@dataclass(frozen=True)
class Cost:
    """Symbolic cost of a node, a block or a network part."""

    params: Poly = ZERO
    flops: Poly = ZERO
    macs: Poly = ZERO

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.params + other.params, self.flops + other.flops, self.macs + other.macs)

    def scale(self, k) -> "Cost":
        return Cost(self.params.scale(k), self.flops.scale(k), self.macs.scale(k))

    def evaluate(self, sizes: Mapping[str, int]) -> "Figures":
        return Figures(_int(self.params.evaluate(sizes)), _int(self.flops.evaluate(sizes)),
                       _int(self.macs.evaluate(sizes)))

    def substitute(self, env: Mapping[str, Poly]) -> "Cost":
        return Cost(substitute(self.params, env), substitute(self.flops, env), substitute(self.macs, env))


NO_COST = Cost()


@dataclass(frozen=True)
class Figures:
    """Concrete counts: parameters, thop-convention FLOPs, multiply-accumulates."""

    params: int = 0
    flops: int = 0
    macs: int = 0

    def __add__(self, other: "Figures") -> "Figures":
        return Figures(self.params + other.params, self.flops + other.flops, self.macs + other.macs)

    def __mul__(self, k: int) -> "Figures":
        return Figures(self.params * k, self.flops * k, self.macs * k)


def _int(value: Fraction) -> int:
    # Every count is a whole number under the block's constraints; floor guards against misuse.
    return value.numerator // value.denominator


# -- rule helpers -------------------------------------------------------------------

def _pair(value: Value) -> tuple[int, int]:
    if isinstance(value, TupleValue):
        items = [constant_int(i) for i in value.items]
        if len(items) == 1:
            return items[0], items[0]  # type: ignore[return-value]
        return items[0], items[1]  # type: ignore[return-value]
    v = constant_int(value)
    return v, v  # type: ignore[return-value]


def numel(shape: Shape) -> Poly:
    return product(shape)


CONVENTIONS = ("torch", "nader")


def conv_out_uncropped(size: Poly, kernel: int, stride: int, dilation: int = 1, convention: str = "torch") -> Poly:
    """Output size of the padded layer before the crop, the size thop counts.

    "torch" (this project's backends): `nn.Conv2d(padding=k'//2)`, so ceil(H/s) for odd k' and
    floor(H/s)+1 for even k'. "nader" (NADER's CustomConv2d): padding max(ceil((k'-s)/2), 0),
    so floor((H + 2p - k')/s) + 1.
    """
    effective = dilation * (kernel - 1) + 1
    if convention == "nader":
        pad = max(-((stride - effective) // 2), 0)  # ceil((k'-s)/2), at least 0
        return floor_div(size + Poly.const(2 * pad - effective + stride), stride)
    if effective % 2:
        return ceil_div(size, stride)
    return floor_div(size, stride) + ONE


def pool_out_uncropped(size: Poly, kernel: int, stride: int, convention: str = "torch") -> Poly:
    """Output size of the padded average pool before the crop (the conv rule with dilation 1)."""
    return conv_out_uncropped(size, kernel, stride, 1, convention)


def conv_cost(batch: Poly, cin: Poly, cout: Poly, height: Poly, width: Poly, kernel: tuple[int, int],
              stride: tuple[int, int], dilation: tuple[int, int] = (1, 1), groups: Poly = ONE,
              bias: bool = True, convention: str = "torch") -> Cost:
    """A "same"-padded Conv2d (also the skeleton's 1x1 convolutions)."""
    per_group = exact_quotient(cin, groups)
    if per_group is None:
        raise CostError(f"groups {groups} does not divide the input channels {cin}")
    kh, kw = kernel
    weights = cout * per_group.scale(kh * kw)
    params = weights + (cout if bias else ZERO)
    oh_u = conv_out_uncropped(height, kh, stride[0], dilation[0], convention)
    ow_u = conv_out_uncropped(width, kw, stride[1], dilation[1], convention)
    oh, ow = ceil_div(height, stride[0]), ceil_div(width, stride[1])
    flops = batch * oh_u * ow_u * weights
    macs = batch * oh * ow * weights
    return Cost(params, flops, macs)


def bn_cost(shape: Shape) -> Cost:
    """BatchNorm2d (affine): 2 parameters per channel; thop counts 2 ops per element, doubled for affine."""
    return Cost(shape[1].scale(2), numel(shape).scale(4), ZERO)


def linear_cost(in_features: Poly, out_shape: Shape, bias: bool = True) -> Cost:
    out_features = out_shape[-1]
    params = in_features * out_features + (out_features if bias else ZERO)
    ops = numel(out_shape) * in_features
    return Cost(params, ops, ops)


def adaptive_avg_pool_cost(in_shape: Shape, oh: int, ow: int) -> Cost:
    """thop: (H*W/(oh*ow) + 1) ops per output element, i.e. (H*W + oh*ow) per (batch, channel)."""
    per_channel = in_shape[2] * in_shape[3] + Poly.const(oh * ow)
    return Cost(ZERO, in_shape[0] * in_shape[1] * per_channel, ZERO)


# -- rules, one per operation --------------------------------------------------------

class CostContext:
    """What a cost rule sees: the block, its shapes, and sizes of layer parameters."""

    def __init__(self, block: Block, result: ShapeResult, convention: str = "torch"):
        self.block = block
        self.result = result
        self.convention = convention
        scratch = ShapeResult(result.role, result.contract, constraints=list(result.constraints))
        self._sizes = ShapeContext(block, scratch)

    def size(self, node: Node, name: str) -> Poly:
        self._sizes.node = node
        try:
            return self._sizes.size(node.params[name], f"`{name}`")
        except (ShapeError, KeyError) as error:
            raise CostError(f"node {node.id}: cannot size `{name}`: {error}") from None


Rule = Callable[[CostContext, Node, tuple, Shape], Cost]


def has_bias(node: Node) -> bool:
    """Conv2d's `bias` flag (1 unless written `bias=0`)."""
    value = node.params.get("bias")
    return value is None or constant_int(value) != 0


def _cost_conv(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    (x,) = xs
    groups = ctx.result.facts.get(node.id, {}).get("groups") or ctx.size(node, "groups")
    return conv_cost(x[0], x[1], out[1], x[2], x[3], _pair(node.params["kernel_size"]),
                     _pair(node.params["stride"]), _pair(node.params["dilation"]), groups,
                     bias=has_bias(node), convention=ctx.convention)


def _cost_linear(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    (x,) = xs
    return linear_cost(x[-1], out)


def _cost_avg_pool(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    (x,) = xs
    kh, kw = _pair(node.params["kernel_size"])
    sh, sw = _pair(node.params["stride"])
    uncropped = (x[0], x[1], pool_out_uncropped(x[2], kh, sh, ctx.convention),
                 pool_out_uncropped(x[3], kw, sw, ctx.convention))
    return Cost(ZERO, numel(uncropped), ZERO)


def _cost_adaptive_avg(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    (x,) = xs
    oh, ow = _pair(node.params["output_size"])
    return adaptive_avg_pool_cost(x, oh, ow)


def _cost_bn(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    return bn_cost(xs[0])


def _cost_ln(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    (x,) = xs
    return Cost(x[-1].scale(2), numel(x).scale(4), ZERO)


def _cost_softmax(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    """thop: per softmax row of n features, n exp + (n-1) adds + n divides."""
    (x,) = xs
    if not x:
        return Cost(ZERO, ONE, ZERO)
    axis = constant_int(node.params["dim"]) % len(x)  # type: ignore[operator]
    rows = product(s for k, s in enumerate(x) if k != axis)
    return Cost(ZERO, rows * (x[axis].scale(3) - ONE), ZERO)


def _cost_matmul(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    a, b = xs
    if ctx.result.facts.get(node.id, {}).get("swapped"):
        a, b = b, a
    inner = a[-1]
    return Cost(ZERO, ZERO, numel(out) * inner)


def _free(ctx: CostContext, node: Node, xs: list, out: Shape) -> Cost:
    """Not counted by thop: element-wise activations, DropPath and functional operations."""
    return NO_COST


COST_RULES: dict[Op, Rule] = {
    Op.CONV2D: _cost_conv,
    Op.LINEAR: _cost_linear,
    Op.AVG_POOL2D: _cost_avg_pool,
    Op.MAX_POOL2D: _free,  # thop: zero_ops
    Op.ADAPTIVE_AVG_POOL2D: _cost_adaptive_avg,
    Op.ADAPTIVE_MAX_POOL2D: _free,  # thop: zero_ops
    Op.RELU: _free,  # thop: zero_ops
    Op.GELU: _free,  # no thop rule
    Op.SIGMOID: _free,  # no thop rule
    Op.BN: _cost_bn,
    Op.LN: _cost_ln,
    Op.SOFTMAX: _cost_softmax,
    Op.DROP_PATH: _free,
    Op.ZERO: _free,
    Op.ADD: _free,
    Op.MUL: _free,
    Op.MATMUL: _cost_matmul,  # macs only: torch.matmul is functional, thop does not see it
    Op.CONCAT: _free,
    Op.MEAN: _free,
    Op.MAX: _free,
    Op.SUM: _free,
    Op.PERMUTE: _free,
    Op.REPEAT: _free,
    Op.RESHAPE: _free,
}


# -- block costs ----------------------------------------------------------------------

@dataclass
class BlockCost:
    """A block's symbolic cost: per node and in total, plus what activation memory needs."""

    block: Block
    result: ShapeResult
    nodes: dict[int, Cost] = field(default_factory=dict)
    total: Cost = NO_COST
    elements: dict[int, Poly] = field(default_factory=dict)  # output elements per node
    schedule: list[tuple[int, list[int]]] = field(default_factory=list)  # (node, tensors freed after it)
    inputs: frozenset = frozenset()  # the block's input nodes (their tensors are the caller's)

    def evaluate(self, sizes: Mapping[str, int]) -> Figures:
        return self.total.evaluate(sizes)

    def peak_elements(self, sizes: Mapping[str, int]) -> int:
        return peak_elements(self, sizes)

    def saved_elements(self, sizes: Mapping[str, int]) -> int:
        return saved_elements(self, sizes)


def block_cost(block: Block, result: ShapeResult, convention: str = "torch") -> BlockCost:
    """The symbolic cost of a verified block (`result` from its `BlockReport.shapes`).

    `convention` picks the padding whose uncropped output thop counts: "torch" for this project's
    modules (the default, what `build_network` returns), "nader" for NADER's generated code.
    """
    if result is None or result.failed:
        raise CostError(f"block `{block.name}` did not verify; it has no cost")
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}")
    return CostInterpreter(block, result, convention).run()


class CostInterpreter(Interpreter):
    """The cost walk: each live node's cost by its rule in `COST_RULES`, from the inferred shapes."""

    __slots__ = ("ctx", "cost")

    HANDLERS = COST_RULES
    HANDLER_NAME = "cost rule"

    def __init__(self, block: Block, result: ShapeResult, convention: str = "torch"):
        super().__init__(block, result.order, inputs_from=result.shapes)  # the live nodes: dead ones cost nothing
        self.ctx = CostContext(block, result, convention)
        self.cost = BlockCost(block, result)

    def _shape(self, node: Node) -> Shape:
        """The node's own shape (every live node of a verified block has one)."""
        out = self.inputs_from.get(node.id)
        if out is None:
            raise CostError(f"node {node.id} of `{self.block.name}` has no shape")
        return out

    def apply(self, rule: Rule, node: Node, inputs: tuple) -> Cost:
        out = self._shape(node)
        self.cost.elements[node.id] = numel(out)  # every output but the terminal's is a tensor in memory
        return rule(self.ctx, node, inputs, out)

    def input(self, node: Node) -> Cost:
        out = self._shape(node)
        if node.op not in self.cost.result.contract.inputs:
            return self.missing(node)
        self.cost.elements[node.id] = numel(out)
        self.cost.inputs = self.cost.inputs | {node.id}
        return NO_COST

    def output(self, node: Node, inputs: tuple) -> Cost:
        self._shape(node)
        return NO_COST

    def blocked(self, node: Node) -> None:  # as the rule's input shapes were fetched: after its own shape
        self._shape(node)
        raise KeyError(next(i for i in self.sources.get(node.id, ()) if self.inputs_from.get(i) is None))

    def missing(self, node: Node) -> Cost:
        self._shape(node)
        raise CostError(f"no cost rule for `{node.op_name}`")

    def finish(self) -> BlockCost:
        cost = self.cost
        cost.nodes = self.values
        total = NO_COST
        for c in self.values.values():
            total = total + c
        cost.total = total
        cost.schedule = _schedule(self.block, self.order)
        return cost


def _schedule(block: Block, order: list[int]) -> list[tuple[int, list[int]]]:
    """Topological execution with each tensor freed after its last consumer."""
    position = {n: k for k, n in enumerate(order)}
    last_use: dict[int, int] = {}
    for s, t, _, _ in block.wires():
        if s in position and t in position:
            last_use[s] = max(last_use.get(s, -1), position[t])
    freed: dict[int, list[int]] = {}
    for tensor, step in last_use.items():
        freed.setdefault(order[step], []).append(tensor)
    return [(n, freed.get(n, [])) for n in order]


def peak_elements(cost: BlockCost, sizes: Mapping[str, int]) -> int:
    """Largest number of activation elements alive at once during the block's forward.

    An estimate: every operation's output counts as a new tensor (views included), inputs
    stay alive until their last consumer, and the output terminal aliases its producer.
    """
    live = 0
    peak = 0
    values: dict[int, int] = {}
    for node_id, frees in cost.schedule:
        if node_id in cost.elements:
            values[node_id] = _int(cost.elements[node_id].evaluate(sizes))
            live += values[node_id]
        peak = max(peak, live)
        for tensor in frees:
            live -= values.get(tensor, 0)
    return peak


def saved_elements(cost: BlockCost, sizes: Mapping[str, int]) -> int:
    """Activation elements a training step keeps from the block's forward for its backward.

    An estimate, like `peak_elements`: every operation's output counts once (autograd keeps the
    input of a convolution, normalization, linear layer or product and the output of an
    activation, and those are other nodes' outputs), views included; the block's inputs are
    counted by whatever produced them.
    """
    return sum(_int(cost.elements[n].evaluate(sizes)) for n, _ in cost.schedule
               if n in cost.elements and n not in cost.inputs)


# -- substitution and monotonicity --------------------------------------------------------

def substitute(poly: Poly, env: Mapping[str, Poly]) -> Poly:
    """`poly` with free symbols replaced by polynomials (derived ceil/floor atoms rebuilt)."""
    values = {atom: _substitute_atom(atom, env) for atom in poly.atoms()}
    if all(len(v.terms) <= 1 for v in values.values()):
        # Fast path (the common case: constants and multiples of one width): each monomial maps
        # to a single term, so the result is accumulated without polynomial products.
        single = {a: next(iter(v.terms.items())) if v.terms else None for a, v in values.items()}
        terms: dict = {}
        for mono, coeff in poly.terms.items():
            c, powers = Fraction(coeff), {}
            for atom, power in mono:
                term = single[atom]
                if term is None:
                    c = Fraction(0)
                    break
                m, k = term
                c *= k ** power
                for a, e in m:
                    powers[a] = powers.get(a, 0) + e * power
            if c:
                key = tuple(sorted(powers.items()))
                terms[key] = terms.get(key, 0) + c
        return Poly(terms)
    result = ZERO
    for mono, coeff in poly.terms.items():
        term = Poly.const(coeff)
        for atom, power in mono:
            for _ in range(power):
                term = term * values[atom]
        result = result + term
    return result


def _substitute_atom(atom: str, env: Mapping[str, Poly]) -> Poly:
    if atom in env:
        return env[atom]
    derived = _DERIVED.get(atom)
    if derived is None:
        return Poly.atom(atom)
    kind, inner, k = derived
    inner = substitute(inner, env)
    c = inner.constant()
    if c is not None:  # evaluate exactly (ceil_div/floor_div take whole numbers)
        value = c / k
        whole = value.numerator // value.denominator
        return Poly.const(whole if kind == "floor" or value.denominator == 1 else whole + 1)
    return ceil_div(inner, k) if kind == "ceil" else floor_div(inner, k)


def nondecreasing(poly: Poly) -> bool:
    """A sufficient check that `poly` never decreases as its free symbols grow from 1.

    True when every non-constant term has a positive coefficient and only atoms that are
    themselves non-negative and non-decreasing (free symbols; ceil/floor of such).
    """
    return all(coeff > 0 and all(_rising_atom(a) for a, _ in mono)
               for mono, coeff in poly.terms.items() if mono)


def _rising_atom(atom: str) -> bool:
    derived = _DERIVED.get(atom)
    if derived is None:
        return True
    _, inner, _ = derived
    return all(coeff > 0 and all(_rising_atom(a) for a, _ in mono) for mono, coeff in inner.terms.items())


def evaluate_int(poly: Poly, sizes: Mapping[str, int]) -> int:
    return _int(poly.evaluate(sizes))


def cost_of(block: Block, result: ShapeResult, sizes: Mapping[str, int]) -> Figures:
    """Convenience: the concrete cost of a verified block at `sizes` (see `ShapeResult.sizes`)."""
    return block_cost(block, result).evaluate(sizes)


__all__ = ["CONVENTIONS", "COST_RULES", "BlockCost", "Cost", "CostError", "Figures", "NO_COST", "adaptive_avg_pool_cost",
           "block_cost", "bn_cost", "conv_cost", "cost_of", "evaluate_int", "linear_cost", "nondecreasing",
           "numel", "peak_elements", "saved_elements", "substitute"]

