"""What a shape rule sees: the node, the symbol bindings and where constraints go (`ShapeContext`).

The types it works with (shapes, results, errors) are in `shape_types.py`."""
from __future__ import annotations

from fractions import Fraction
from typing import Optional

from nader.dsl.diagnostics import Code, Label
from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue, Value
from nader.dsl.ir import Block, Node
from nader.dsl.span import Span

from .shape_codes import (AXIS_OUT_OF_RANGE, GROUPS, LAYER_SIZE_DEPENDS, NON_POSITIVE, NOT_WHOLE, RANK_MISMATCH,
                          RESOLUTION_BOUND)
from .shape_types import Shape, ShapeError, ShapeResult, shape_str
from .symbolic import Constraint, Poly, assume_exact, exact_quotient, floor_div, integer_constraint


_BATCH_OR_SPATIAL = frozenset({"B", "H", "W"})


def _operand_labels(ctx: "ShapeContext", pairs) -> tuple[Label, ...]:
    """Secondary labels on the node lines of the operands that disagree: (node id, shape) pairs."""
    labels = []
    for node_id, shape in pairs:
        node = ctx.block.node(node_id)
        if node is not None:
            labels.append(Label(node.span, f"node {node_id} gives {shape_str(shape)}"))
    return tuple(labels)


# -- the interpreter ---------------------------------------------------------------

def alike(p: Poly, q: Poly) -> Optional[list[tuple[Poly, int]]]:
    """Whether p == q for all sizes, or for the sizes where the rounded divisions in them are exact: the
    divisibilities that takes (none when p == q), or None where they differ (`ShapeContext.same`)."""
    if p == q:
        return []
    p_exact, p_needed = assume_exact(p)
    q_exact, q_needed = assume_exact(q)
    if not (p_needed or q_needed) or p_exact != q_exact:
        return None
    return p_needed + q_needed


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
        if type(value) is Sym:  # most sizes are one symbol
            return self.env[value.name]
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
        needed = alike(p, q)
        if needed is None:
            return False
        for inner, k in needed:
            self.add_constraint(Constraint(inner, k, "rounded sizes must be exact"))
        return True

    # -- helpers for rules -----------------------------------------------------------
    def warn(self, code: Code, message: str, help: str) -> None:
        """A warning on the current node, emitted once the rule has succeeded."""
        self.warnings.append((code, message, help))

    def layer_axis(self, size: Poly, what: str) -> None:
        """The axis a layer learns over: never in B; in H or W, resolution-bound (or, in `any`, an error)."""
        free = size.free_symbols()
        if free.isdisjoint(_BATCH_OR_SPATIAL):
            return  # learns over channels, as most layers do
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
