"""What a block's lowerings see: its shapes, weights and widths, and its size expressions as graph values.

Sizes known at export time fold to constants; those that depend on the input's `B`, `H`, `W`
are computed in the graph from `Shape` of the block's input, exactly (see `Dyn`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence, Union

from nader.compiler.backends.onnx.graph import Lowering, OnnxLoweringError, Weights
from nader.compiler.passes.shapes import ShapeResult
from nader.dsl.expr import BinOp, Neg, Num, Sym, Value
from nader.dsl.ir import Block, Node, id_token
from nader.dsl.ops import Op

# A size during lowering: a Fraction when it is known at export time, else a `Dyn`.
@dataclass(frozen=True)
class Dyn:
    """A size computed in the graph: `tensor / denominator`, `tensor` an int64 tensor of shape (1,)."""

    tensor: str
    denominator: int = 1


Size = Union[Fraction, Dyn]


@dataclass
class BlockContext:
    """What a lowering sees: the block, its shapes, weights, concrete widths and the input's sizes."""

    block: Block
    shapes: ShapeResult
    weights: Weights  # the block's layers, `n{id}.weight`, ...
    sizes: dict[str, int]  # concrete C and dim
    inputs: dict[Op, str]  # graph tensors of the input terminals
    g: Lowering
    _symbols: dict[str, str] = field(default_factory=dict)

    def layer(self, node: Node) -> Weights:
        key = f"n{id_token(node.id)}"
        layer = self.weights.at(key)
        if not layer.exists():
            raise OnnxLoweringError(f"the module has no layer `{key}` for node {node.id} (`{node.op_name}`)")
        return layer

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
