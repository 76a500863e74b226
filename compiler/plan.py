"""The plan of a whole network: every block instance and skeleton layer, with its widths and sizes.

Everything made from a network reads its plan, so they agree by construction: the analytic
cost (`network_cost.py`), the width fit (`fit.py`), the PyTorch assembly (`network.py`), the
standalone source emitter (`backends/network_source.py`) and the ONNX lowering
(`backends/onnx/network.py`). Unit names are the module paths of the built network (the
skeleton classes of `backends/torch_support.py`; a test checks they agree), so a unit's
weights are the state_dict keys under its name. Widths may be polynomials in the base
width `x` while fitting.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence, Union

from nader.compiler.architecture import Architecture
from nader.compiler.errors import BuildError
from nader.compiler.passes.contract import contract, fixed
from nader.compiler.passes.symbolic import Poly
from nader.compiler.skeletons import SKELETONS, Skeleton

X = Poly.atom("x")  # the base width while fitting

# What a LayerUnit can be: the layers a skeleton adds around its blocks.
LAYER_KINDS = ("relu_conv_bn", "factorized_reduce", "bn_relu", "avg_pool", "linear")

Width = Poly  # a constant, or a multiple of the base width X


@dataclass(frozen=True)
class BlockUnit:
    """One instance of an architecture block."""

    name: str  # module path in the built network, e.g. "layer1.0"
    part: str  # "stem" | "base" | "downsample"
    C: Width  # input channels (3 for the stem)
    dim: Width  # output channels
    size: tuple[int, int]  # input H, W
    out_size: tuple[int, int]


@dataclass(frozen=True)
class LayerUnit:
    """A layer the skeleton adds; `kind` is one of LAYER_KINDS."""

    name: str
    kind: str
    cin: Width
    cout: Width
    size: tuple[int, int]
    out_size: tuple[int, int]


@dataclass(frozen=True)
class CellUnit:
    name: str
    preprocess0: Optional[LayerUnit]  # None: identity
    preprocess1: Optional[LayerUnit]
    cell: BlockUnit
    reduction: bool


@dataclass
class Plan:
    skeleton: Skeleton
    widths: tuple[Width, ...]
    depths: tuple[int, ...]
    input_size: int
    num_classes: int
    stem_stride: int
    stem: BlockUnit = None  # type: ignore[assignment]
    stages: list[list[BlockUnit]] = field(default_factory=list)
    downsamples: list[BlockUnit] = field(default_factory=list)
    cells: list[CellUnit] = field(default_factory=list)
    lastact: Optional[LayerUnit] = None  # BN-ReLU before pooling (nas-bench-201)
    pool: LayerUnit = None  # type: ignore[assignment]
    fc: LayerUnit = None  # type: ignore[assignment]

    def units(self) -> Iterator[Union[BlockUnit, LayerUnit]]:
        yield self.stem
        if self.skeleton.cells:
            for c in self.cells:
                if c.preprocess0:
                    yield c.preprocess0
                if c.preprocess1:
                    yield c.preprocess1
                yield c.cell
        else:
            for i, stage in enumerate(self.stages):
                yield from stage
                if i < len(self.downsamples):
                    yield self.downsamples[i]
        if self.lastact is not None:
            yield self.lastact
        yield self.pool
        yield self.fc

    def block_units(self) -> list[BlockUnit]:
        """Every block instance, in network order."""
        return [u for u in self.units() if isinstance(u, BlockUnit)]

    def concrete_widths(self, x: Optional[int] = None) -> list[int]:
        return [width_int(w, x) for w in self.widths]


def width_int(w: Poly, x: Optional[int] = None) -> int:
    """A width's value (at base width `x` while fitting)."""
    value = w.evaluate({"x": x} if x is not None else {})
    return value.numerator // value.denominator


def _spatial(arch: Architecture, part: str, size: tuple[int, int]) -> tuple[int, int]:
    """The output resolution of `part` at input `size`, from its role's contract; verifies the block there."""
    if min(size) < 1:
        raise BuildError(f"the {part} block would receive a {size[0]}x{size[1]} input: the input is too small "
                         f"for this skeleton")
    report = arch.report_at(part, size[0])
    out = contract(report.role, arch.stem_stride, fixed(size[0])).output
    return int(out[2].constant()), int(out[3].constant())


def make_plan(arch: Architecture, widths: Sequence[Width], depths: Sequence[int], input_size: int,
              num_classes: int, skeleton: Optional[Skeleton] = None) -> Plan:
    """Lay out the network: every block instance and skeleton layer with its widths and sizes."""
    skel = skeleton or (SKELETONS["darts"] if arch.cells else SKELETONS["nb201"])
    widths = tuple(w if isinstance(w, Poly) else Poly.const(int(w)) for w in widths)
    plan = Plan(skel, widths, tuple(depths), input_size, num_classes, arch.stem_stride)
    size = (input_size, input_size)
    stem_out = _spatial(arch, "stem", size)
    plan.stem = BlockUnit("stem", "stem", Poly.const(3), widths[0], size, stem_out)
    size = stem_out
    if skel.cells:
        size = _plan_cells(arch, plan, size)
    else:
        for i, (w, depth) in enumerate(zip(widths, depths)):
            stage = []
            if depth:
                _spatial(arch, "base", size)
            for k in range(depth):
                stage.append(BlockUnit(f"layer{i + 1}.{k}", "base", w, w, size, size))
            plan.stages.append(stage)
            if i + 1 < len(widths):
                out = _spatial(arch, "downsample", size)
                plan.downsamples.append(BlockUnit(f"downsample{i + 1}", "downsample", w, widths[i + 1], size, out))
                size = out
    last = widths[-1]
    if skel.lastact:
        plan.lastact = LayerUnit("lastact", "bn_relu", last, last, size, size)
    plan.pool = LayerUnit("avg_pool", "avg_pool", last, last, size, (1, 1))
    plan.fc = LayerUnit("fc", "linear", last, Poly.const(num_classes), (1, 1), (1, 1))
    return plan


def _plan_cells(arch: Architecture, plan: Plan, size: tuple[int, int]) -> tuple[int, int]:
    """Cells in order; returns the last cell's output size."""
    widths, depths = plan.widths, plan.depths
    kinds: list[tuple[Width, bool]] = []
    for i, (w, depth) in enumerate(zip(widths, depths)):
        if i > 0:
            kinds.append((w, True))
        kinds.extend((w, False) for _ in range(depth))
    prev_prev = prev = (widths[0], size)
    for index, (width, reduction) in enumerate(kinds):
        name = f"cells.{index}"
        (c_pp, s_pp), (c_p, s_p) = prev_prev, prev
        if s_pp != s_p:
            half = (-(-s_pp[0] // 2), -(-s_pp[1] // 2))
            if half != s_p:
                raise BuildError(f"cell {index}: its inputs have sizes {s_pp} and {s_p}, which a factorized "
                                 f"reduction cannot reconcile")
            pre0 = LayerUnit(f"{name}.preprocess0", "factorized_reduce", c_pp, width, s_pp, s_p)
        elif c_pp != width:
            pre0 = LayerUnit(f"{name}.preprocess0", "relu_conv_bn", c_pp, width, s_pp, s_pp)
        else:
            pre0 = None
        pre1 = LayerUnit(f"{name}.preprocess1", "relu_conv_bn", c_p, width, s_p, s_p) if c_p != width else None
        part = "downsample" if reduction else "base"
        out = _spatial(arch, part, s_p)
        cell = BlockUnit(f"{name}.cell", part, width, width, s_p, out)
        plan.cells.append(CellUnit(name, pre0, pre1, cell, reduction))
        prev_prev, prev = prev, (width, out)
    return prev[1]


# -- depths and widths of a skeleton -------------------------------------------------------------

def resolve_depths(skel: Skeleton, depths: Optional[Sequence[int]]) -> tuple[int, ...]:
    if depths is None:
        return skel.depths
    try:
        values = tuple(int(d) for d in depths)
    except (TypeError, ValueError):
        raise BuildError(f"depths must be integers, not {depths!r}") from None
    if len(values) != len(skel.multipliers):
        raise BuildError(f"the {skel.name} skeleton has {len(skel.multipliers)} stages; "
                         f"got {len(values)} depths {list(values)}")
    if any(d < 0 for d in values) or sum(values) < 1:
        raise BuildError(f"depths must be non-negative with at least one block, not {list(values)}")
    return values


def resolve_widths(skel: Skeleton, widths: Optional[Sequence[int]]) -> Optional[tuple[int, ...]]:
    """Full stage widths from a base width or a list; checks the skeleton's width ratios."""
    if widths is None:
        return None
    if isinstance(widths, int):
        widths = [widths]
    try:
        values = tuple(int(w) for w in widths)
    except (TypeError, ValueError):
        raise BuildError(f"widths must be integers, not {widths!r}") from None
    if any(w < 1 for w in values):
        raise BuildError(f"widths must be positive, not {list(values)}")
    if len(values) == 1:
        values = tuple(values[0] * m for m in skel.multipliers)
    if len(values) != len(skel.multipliers):
        raise BuildError(f"the {skel.name} skeleton has {len(skel.multipliers)} stages; got {len(values)} widths "
                         f"{list(values)} (or give one base width)")
    if not skel.cells:
        for a, b in zip(values, values[1:]):
            if b != 2 * a:
                raise BuildError(f"stage widths must double (a downsample block maps C to 2C): got {list(values)}; "
                                 f"give the base width alone, e.g. widths=[{values[0]}]")
    return values
