"""Expressions of the block language: integers, decimals, the size symbols
`B C dim H W`, `+ - * / //` and unary minus.

Expressions are immutable values; their column spans do not take part in
equality. They are evaluated by walking the tree, never with `eval`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from fractions import Fraction
from typing import Iterator, Mapping, Union

from .span import NO_COLS, ColSpan

#: `B` batch, `C` block input channels, `dim` block output channels, `H`/`W` spatial size.
SIZE_SYMBOLS = ("B", "C", "dim", "H", "W")
SPATIAL_SYMBOLS = frozenset({"H", "W"})

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "//": 2}
_NEG_PRECEDENCE = 3
_ATOM_PRECEDENCE = 4


class EvaluationError(ValueError):
    """An expression has no value for the given sizes (unknown symbol, division by zero)."""


@dataclass(frozen=True, slots=True)
class Num:
    """An integer or decimal literal."""

    value: Union[int, float]
    span: ColSpan = field(default=NO_COLS, compare=False, repr=False)

    def __str__(self) -> str:
        return repr(self.value) if isinstance(self.value, float) else str(self.value)


@dataclass(frozen=True, slots=True)
class Sym:
    """A symbol such as `C` or `dim`, bound when the block is placed in a network."""

    name: str
    span: ColSpan = field(default=NO_COLS, compare=False, repr=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Neg:
    """Unary minus."""

    operand: "Expr"
    span: ColSpan = field(default=NO_COLS, compare=False, repr=False)

    def __str__(self) -> str:
        return "-" + _wrap(self.operand, _NEG_PRECEDENCE)


@dataclass(frozen=True, slots=True)
class BinOp:
    """A binary arithmetic expression: `+`, `-`, `*`, `/` or `//`."""

    op: str
    lhs: "Expr"
    rhs: "Expr"
    span: ColSpan = field(default=NO_COLS, compare=False, repr=False)

    def __str__(self) -> str:
        prec = _PRECEDENCE[self.op]
        # The right operand is parenthesised at equal precedence so that the
        # printed text parses back to this exact tree (`a-(b-c)`, `a+(b+c)`).
        return _wrap(self.lhs, prec) + self.op + _wrap(self.rhs, prec + 1)


Expr = Union[Num, Sym, Neg, BinOp]


@dataclass(frozen=True, slots=True)
class TupleValue:
    """A parenthesised list such as `kernel_size=(1,3)` or `dim=(2,3)`."""

    items: tuple
    span: ColSpan = field(default=NO_COLS, compare=False, repr=False)

    def __str__(self) -> str:
        return "(" + ",".join(str(item) for item in self.items) + ")"


Value = Union[Num, Sym, Neg, BinOp, TupleValue]


def _precedence(expr: Expr) -> int:
    if isinstance(expr, BinOp):
        return _PRECEDENCE[expr.op]
    if isinstance(expr, Neg):
        return _NEG_PRECEDENCE
    return _ATOM_PRECEDENCE


def _wrap(expr: Expr, min_precedence: int) -> str:
    text = str(expr)
    return f"({text})" if _precedence(expr) < min_precedence else text


def leaves(value: Value) -> Iterator[Union[Num, Sym]]:
    """Every number and symbol in an expression or tuple, left to right."""
    if isinstance(value, (Num, Sym)):
        yield value
    elif isinstance(value, Neg):
        yield from leaves(value.operand)
    elif isinstance(value, BinOp):
        yield from leaves(value.lhs)
        yield from leaves(value.rhs)
    elif isinstance(value, TupleValue):
        for item in value.items:
            yield from leaves(item)


def symbols_in(value: Value) -> Iterator[Sym]:
    """Every symbol occurrence in an expression or tuple, left to right."""
    return (leaf for leaf in leaves(value) if isinstance(leaf, Sym))


def evaluate_expr(expr: Expr, sizes: Mapping[str, int] | None = None) -> Fraction | float:
    """Exact value of `expr` (`/` is exact division, `//` floor division)."""
    sizes = sizes or {}
    if isinstance(expr, Num):
        return expr.value if isinstance(expr.value, float) else Fraction(expr.value)
    if isinstance(expr, Sym):
        if expr.name not in sizes:
            raise EvaluationError(f"no value for symbol `{expr.name}`")
        return Fraction(sizes[expr.name])
    if isinstance(expr, Neg):
        return -evaluate_expr(expr.operand, sizes)
    if isinstance(expr, BinOp):
        lhs, rhs = evaluate_expr(expr.lhs, sizes), evaluate_expr(expr.rhs, sizes)
        if expr.op == "+":
            return lhs + rhs
        if expr.op == "-":
            return lhs - rhs
        if expr.op == "*":
            return lhs * rhs
        if rhs == 0:
            raise EvaluationError(f"division by zero in `{expr}`")
        if expr.op == "/":
            return lhs / rhs
        return Fraction(lhs // rhs)
    raise TypeError(f"not an expression: {expr!r}")


def constant_int(value: Value) -> int | None:
    """The integer an expression denotes without any symbol, else None."""
    if type(value) is Num:  # the common case, e.g. `stride=1`
        return value.value if type(value.value) is int else None
    return _constant_int(value)


@lru_cache(maxsize=4096)
def _constant_int(value: Value) -> int | None:
    if isinstance(value, TupleValue) or any(True for _ in symbols_in(value)):
        return None
    try:
        result = evaluate_expr(value)
    except EvaluationError:
        return None
    if isinstance(result, Fraction) and result.denominator == 1:
        return int(result)
    return None


def constant_number(value: Value) -> float | None:
    """The number (int or float) an expression denotes without symbols, else None."""
    if isinstance(value, TupleValue) or any(True for _ in symbols_in(value)):
        return None
    try:
        return float(evaluate_expr(value))
    except EvaluationError:
        return None
