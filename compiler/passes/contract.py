"""What a block is verified against: its role's contract, in a size domain.

A *domain* says for which input sizes a verdict holds (docs/semantics.md, "Domains"):

* `square` (the default): square feature maps, `H = W`, one symbol for both, as every NADER
  skeleton and dataset feeds them. A network builds each block at the resolution of its
  stage, so a layer may learn over a spatial axis there (a resolution-bound layer).
* `any`: every `H` and `W` separately, with one set of weights for all of them.
* a fixed resolution `n`: the block's input is `n x n` (what a network's stage feeds it).

The contract gives the role's input shapes, its output shape and the symbol bindings, in
the domain's spatial sizes.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Optional

from nader.dsl.ir import Role
from nader.dsl.ops import Op

from .symbolic import Poly, ceil_div

Shape = tuple  # tuple[Poly, ...]

B, C, DIM, H, W = (Poly.atom(s) for s in ("B", "C", "dim", "H", "W"))


@dataclass(frozen=True)
class Domain:
    """The input sizes a verdict holds for: `square`, `any`, or `fixed` at `size` x `size`."""

    name: str
    size: Optional[int] = None

    def spatial(self) -> tuple[Poly, Poly]:
        """The sizes the input's `H` and `W` stand for."""
        if self.name == "any":
            return H, W
        if self.name == "square":
            return H, H
        side = Poly.const(self.size)
        return side, side

    @property
    def per_resolution(self) -> bool:
        """Whether a block is built for one resolution at a time (so layers may learn over H or W)."""
        return self.name != "any"

    def __str__(self) -> str:
        return self.name if self.size is None else f"{self.size}x{self.size}"


SQUARE = Domain("square")
ANY = Domain("any")
DOMAINS = ("square", "any")


def fixed(size: int) -> Domain:
    if size < 1:
        raise ValueError(f"a resolution must be positive, not {size}")
    return Domain("fixed", int(size))


def parse_domain(text) -> Domain:
    """`square`, `any`, or a resolution (`32`, `32x32`)."""
    if isinstance(text, Domain):
        return text
    key = str(text).strip().lower()
    if key in DOMAINS:
        return SQUARE if key == "square" else ANY
    side, _, other = key.partition("x")
    if side.isdigit() and (not other or other == side) and int(side) >= 1:
        return fixed(int(side))
    raise ValueError(f"unknown domain {text!r}: use `square`, `any` or a square resolution such as `32`")


@dataclass(frozen=True)
class Contract:
    """What a role promises: the shapes of its inputs and output and the symbols' bindings."""

    inputs: Mapping[Op, Shape]
    output: Shape
    env: Mapping[str, Poly]


@lru_cache(maxsize=256)
def contract(role: Role, stem_stride: int = 1, domain: Domain = SQUARE) -> Contract:
    """Input shapes, output shape and symbol bindings of a role (see docs/semantics.md). Shared: do not mutate."""
    h, w = domain.spatial()
    two = Poly.const(2)
    if role is Role.STEM:
        s = stem_stride
        return Contract({Op.INPUT: (B, Poly.const(3), h, w)}, (B, DIM, ceil_div(h, s), ceil_div(w, s)),
                        {"B": B, "C": Poly.const(3), "dim": DIM, "H": h, "W": w})
    if role is Role.DOWNSAMPLE:
        return Contract({Op.INPUT: (B, C, h, w)}, (B, two * C, ceil_div(h, 2), ceil_div(w, 2)),
                        {"B": B, "C": C, "dim": two * C, "H": h, "W": w})
    if role is Role.CELL:
        return Contract({Op.INPUT1: (B, C, h, w), Op.INPUT2: (B, C, h, w)}, (B, C, h, w),
                        {"B": B, "C": C, "dim": C, "H": h, "W": w})
    if role is Role.REDUCTION_CELL:
        # Cells see inputs already preprocessed to the cell's width, so C = dim (as in DARTS).
        return Contract({Op.INPUT1: (B, C, h, w), Op.INPUT2: (B, C, h, w)}, (B, C, ceil_div(h, 2), ceil_div(w, 2)),
                        {"B": B, "C": C, "dim": C, "H": h, "W": w})
    return Contract({Op.INPUT: (B, C, h, w)}, (B, C, h, w), {"B": B, "C": C, "dim": C, "H": h, "W": w})
