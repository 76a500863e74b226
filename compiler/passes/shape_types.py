"""The types of shape inference: a shape, the result of inference and the errors a rule raises.

Apart from the interpreter (`shapes.py`), its rules (`shape_rules.py`) and the context rules see
(`shape_context.py`), so that the size checks (`size_checks.py`), which the interpreter calls,
can name them without importing the interpreter back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from nader.dsl.diagnostics import Code, Label
from nader.dsl.ir import Block, Role
from nader.dsl.span import Span

from .contract import SQUARE, Contract, Domain
from .symbolic import Constraint

Shape = tuple  # tuple[Poly, ...]


def shape_str(shape: Shape) -> str:
    return "(" + ",".join(str(s) for s in shape) + ")"


class ShapeError(Exception):
    def __init__(self, code: Code, message: str, help: Optional[str] = None, span: Optional[Span] = None,
                 labels: tuple[Label, ...] = ()):
        super().__init__(message)
        self.code, self.message, self.help, self.span, self.labels = code, message, help, span, labels


@dataclass
class ShapeResult:
    """What shape inference found for a block: node shapes, constraints and per-node facts."""

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


class _Warning(Exception):
    def __init__(self, code: Code, message: str, help: str, shape: Shape):
        super().__init__(message)
        self.code, self.message, self.help, self.shape = code, message, help, shape
