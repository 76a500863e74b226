"""Skeletons: where a network places an architecture's blocks (stage widths, depths, stem stride).

A skeleton is data: `plan.py` lays a network out from it, `network_cost.py` costs it, and
`architecture.py` checks that a file's blocks suit it (single-input blocks or DARTS cells).
Its standard stem and downsample block, used where a file has none, are `standard_blocks.py`.
"""
from __future__ import annotations

from dataclasses import dataclass

from nader.compiler.errors import BuildError


@dataclass(frozen=True)
class Skeleton:
    name: str
    multipliers: tuple[int, ...]  # stage widths as multiples of the base width
    depths: tuple[int, ...]  # default blocks (cells) per stage
    stem_stride: int  # default stem stride
    cells: bool  # two-input cells (DARTS) instead of base/downsample blocks
    summary: str
    lastact: bool = False  # a BN-ReLU after the last stage, before pooling (NAS-Bench-201's `lastact`)


SKELETONS: dict[str, Skeleton] = {s.name: s for s in [
    Skeleton("nb201", (1, 2, 4), (5, 5, 5), 1, False,
             "NAS-Bench-201: stem, 3 stages of 5 blocks at C, 2C, 4C, downsample blocks between stages"),
    Skeleton("nas-bench-201", (1, 2, 4), (5, 5, 5), 1, False,
             "NAS-Bench-201's own network: the nb201 skeleton plus its BN-ReLU before pooling", lastact=True),
    Skeleton("imagenet", (1, 2, 4, 8), (2, 3, 5, 2), 4, False,
             "ImageNet-style: stem (stride 4), 4 stages at C, 2C, 4C, 8C, downsample blocks between stages"),
    Skeleton("darts", (1, 2, 4), (6, 6, 6), 1, True,
             "DARTS: stem, normal cells with reduction cells at 1/3 and 2/3 (20 cells; depths 2,2,2 for 8)"),
]}


def skeleton_info(name: str) -> Skeleton:
    key = (name or "").strip().lower()
    if key not in SKELETONS:
        raise BuildError(f"unknown skeleton {name!r}; choose one of: {', '.join(SKELETONS)}")
    return SKELETONS[key]


__all__ = ["SKELETONS", "Skeleton", "skeleton_info"]
