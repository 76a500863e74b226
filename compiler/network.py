"""Whole networks: macro skeletons, their analytic cost, and assembly into PyTorch.

A *skeleton* places the blocks of an architecture (`architecture.py`: the base block
`X`, the stem `X_stem` and the downsample block `X_downsample`, or a DARTS cell pair):

* `nb201`: stem (stride 1), three stages of N=5 base blocks at widths C, 2C, 4C,
  a downsample block between stages, global average pooling, a linear classifier.
* `imagenet`: the same with four stages (C, 2C, 4C, 8C), depths 2,3,5,2 by
  default, and an ImageNet-style stem (stride 4 by default; see `stem_stride`).
* `darts`: stem, then 8 or 20 two-input cells with reduction cells at one and two
  thirds; each cell's inputs are preprocessed to its width as in DARTS.

Everything a network is made of is first written down as a `Plan` (units with
their widths and resolutions). The analytic cost (`passes/cost.py`), the width
fit (`fit.py`), the PyTorch assembly (`build_network`) and the standalone source
emitter (`backends/network_source.py`) all read the same plan, so they agree by
construction. Every block unit is verified at its stage's concrete resolution
(`Architecture.report_at`) when the plan is made. Widths in a plan may be
polynomials in the base width `x`: the cost of a whole network is then one
polynomial, which makes fitting cheap.

This module does not import torch until a module is built.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterator, Optional, Sequence, Union

from nader.compiler.architecture import (SKELETONS, STANDARD_BLOCKS, Architecture, BuildError, Skeleton,
                                         architecture_from_program, load_architecture, skeleton_info)
from nader.compiler.passes.contract import contract, fixed
from nader.compiler.passes.cost import (NO_COST, Cost, CostError, Figures, adaptive_avg_pool_cost, bn_cost, conv_cost,
                                        linear_cost, nondecreasing, substitute)
from nader.compiler.passes.symbolic import ONE, Constraint, Poly, ceil_div

X = Poly.atom("x")  # the base width while fitting


# -- datasets ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Dataset:
    name: str
    input_size: int
    num_classes: int


DATASETS: dict[str, Dataset] = {d.name: d for d in [
    Dataset("cifar10", 32, 10),
    Dataset("cifar100", 32, 100),
    Dataset("imagenet16-120", 16, 120),
    Dataset("imagenet", 224, 1000),
    Dataset("digits", 16, 10),  # the runtime's file-free smoke-test dataset
]}
_DATASET_ALIASES = {
    "cifar-10": "cifar10", "cifar10-valid": "cifar10", "cifar-100": "cifar100",
    "imagenet16": "imagenet16-120", "imagenet16_120": "imagenet16-120", "imagenet-16-120": "imagenet16-120",
    "imagenet16120": "imagenet16-120", "imagenet-1k": "imagenet", "imagenet1k": "imagenet", "in1k": "imagenet",
}


def dataset_info(name: str) -> Dataset:
    key = (name or "").strip().lower()
    for prefix in ("nas-bench-201-", "nasbench201-", "nb201-"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    key = _DATASET_ALIASES.get(key, key)
    if key not in DATASETS:
        raise BuildError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    return DATASETS[key]


# -- plans ------------------------------------------------------------------------------------

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
    """A layer the skeleton adds: "relu_conv_bn", "factorized_reduce", "bn_relu", "avg_pool", "linear"."""

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

    def concrete_widths(self, x: Optional[int] = None) -> list[int]:
        return [_width_int(w, x) for w in self.widths]


def _width_int(w: Poly, x: Optional[int]) -> int:
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


# -- cost of a plan ----------------------------------------------------------------------------

def layer_cost(unit: LayerUnit) -> Cost:
    """Cost of a skeleton layer, in thop's convention (see docs/networks.md)."""
    b = ONE
    h, w = Poly.const(unit.size[0]), Poly.const(unit.size[1])
    if unit.kind == "relu_conv_bn":
        return conv_cost(b, unit.cin, unit.cout, h, w, (1, 1), (1, 1), bias=False) + \
            bn_cost((b, unit.cout, h, w))
    if unit.kind == "factorized_reduce":
        half = unit.cout.scale(Fraction(1, 2))
        conv = conv_cost(b, unit.cin, half, h, w, (1, 1), (2, 2), bias=False)
        oh, ow = ceil_div(h, 2), ceil_div(w, 2)
        return conv + conv + bn_cost((b, unit.cout, oh, ow))
    if unit.kind == "bn_relu":  # thop counts nothing for ReLU
        return bn_cost((b, unit.cin, h, w))
    if unit.kind == "avg_pool":
        return adaptive_avg_pool_cost((b, unit.cin, h, w), 1, 1)
    if unit.kind == "linear":
        return linear_cost(unit.cin, (b, unit.cout))
    raise CostError(f"unknown skeleton layer {unit.kind}")


def _block_env(unit: BlockUnit, batch: int = 1) -> dict[str, Poly]:
    return {"B": Poly.const(batch), "C": unit.C, "dim": unit.dim,
            "H": Poly.const(unit.size[0]), "W": Poly.const(unit.size[1])}


def _unit_key(unit: Union[BlockUnit, LayerUnit]) -> tuple:
    if isinstance(unit, BlockUnit):
        return ("block", unit.part, unit.C, unit.dim, unit.size)
    return ("layer", unit.kind, unit.cin, unit.cout, unit.size)


def plan_cost(arch: Architecture, plan: Plan, convention: str = "torch") -> Cost:
    """The network's cost as polynomials in the base width `x` (constants for concrete widths).

    `convention="nader"` counts convolutions and pools as thop sees NADER's padded layers.
    """
    counts: dict[tuple, int] = {}
    examples: dict[tuple, Union[BlockUnit, LayerUnit]] = {}
    for unit in plan.units():
        key = _unit_key(unit)
        counts[key] = counts.get(key, 0) + 1
        examples.setdefault(key, unit)
    total = NO_COST
    for key, count in counts.items():
        unit = examples[key]
        if isinstance(unit, BlockUnit):
            c = arch.cost(unit.part, convention, unit.size[0]).total.substitute(_block_env(unit))
        else:
            c = layer_cost(unit)
        total = total + c.scale(count)
    return total


def plan_constraints(arch: Architecture, plan: Plan) -> list[tuple[Constraint, str]]:
    """Every constraint of every block instance (each with its own C), in the base width `x`.

    Returns (constraint, where) pairs; a constraint without `x` is already decided.
    """
    seen: set = set()
    out: list[tuple[Constraint, str]] = []
    for unit in plan.units():
        key = _unit_key(unit)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(unit, BlockUnit):
            block = arch.block(unit.part)
            env = _block_env(unit)
            for c in arch.report_at(unit.part, unit.size[0]).shapes.constraints:
                size = substitute(c.size, env)
                why = f" ({c.reason})" if c.reason else ""
                where = f"the {unit.part} block `{block.name}` at {unit.name} (C={unit.C}) requires {c}{why}"
                out.append((Constraint(size, c.modulus, c.reason), where))
        elif unit.kind == "factorized_reduce":
            out.append((Constraint(unit.cout, 2, "FactorizedReduce width"),
                        f"{unit.name}: FactorizedReduce needs an even width"))
    return out


def constraint_holds(c: Constraint, x: Optional[int]) -> bool:
    try:
        return c.holds({"x": x} if x is not None else {})
    except KeyError:
        return False


@dataclass
class NetworkModel:
    """A network's analytic model over its base width (the fit's objective)."""

    arch: Architecture
    plan: Plan  # widths in X
    cost: Cost
    constraints: list[tuple[Constraint, str]]
    monotone: bool  # parameters and FLOPs provably non-decreasing in x
    _memory_monotone: Optional[bool] = None

    def memory_monotone(self) -> bool:
        """Whether every activation size is provably non-decreasing in x (checked on first use)."""
        if self._memory_monotone is None:
            self._memory_monotone = _memory_monotone(self.arch, self.plan)
        return self._memory_monotone

    def figures(self, x: int) -> Figures:
        return self.cost.evaluate({"x": x})

    def feasible(self, x: int) -> bool:
        return all(constraint_holds(c, x) for c, _ in self.constraints)

    def broken(self, x: Optional[int]) -> list[str]:
        return [where for c, where in self.constraints if not constraint_holds(c, x)]

    def memory(self, x: int) -> int:
        return peak_memory(self.arch, self.plan, x)

    def widths(self, x: int) -> list[int]:
        return self.plan.concrete_widths(x)


def network_model(arch: Architecture, skeleton: Union[str, Skeleton], depths: Sequence[int], input_size: int,
                  num_classes: int) -> NetworkModel:
    skel = skeleton if isinstance(skeleton, Skeleton) else skeleton_info(skeleton)
    plan = make_plan(arch, [X.scale(m) for m in skel.multipliers], depths, input_size, num_classes, skel)
    cost = plan_cost(arch, plan)
    constraints = plan_constraints(arch, plan)
    monotone = nondecreasing(cost.params) and nondecreasing(cost.flops)
    return NetworkModel(arch, plan, cost, constraints, monotone)


# -- activation memory --------------------------------------------------------------------------

BYTES_PER_ELEMENT = 4  # float32


def _memory_monotone(arch: Architecture, plan: Plan) -> bool:
    for unit in plan.units():
        if isinstance(unit, BlockUnit):
            env = _block_env(unit)
            for p in arch.cost(unit.part, size=unit.size[0]).elements.values():
                if not nondecreasing(substitute(p, env)):
                    return False
    return True


def peak_memory(arch: Architecture, plan: Plan, x: Optional[int] = None) -> int:
    """Estimated peak activation memory (bytes, float32, batch 1) of an inference forward pass.

    Each block's peak comes from a liveness walk over its nodes (`passes/cost.py`); the skeleton
    adds what it keeps alive beside the block (in DARTS, the previous cell's output).
    """
    def elements(width: Poly, size: tuple[int, int]) -> int:
        return _width_int(width, x) * size[0] * size[1]

    def block_peak(unit: BlockUnit) -> int:
        sizes = {"B": 1, "C": _width_int(unit.C, x), "dim": _width_int(unit.dim, x),
                 "H": unit.size[0], "W": unit.size[1]}
        return arch.cost(unit.part, size=unit.size[0]).peak_elements(sizes)

    peak = block_peak(plan.stem)
    if plan.skeleton.cells:
        for c in plan.cells:
            held = elements(c.preprocess1.cin, c.preprocess1.size) if c.preprocess1 else 0
            for pre in (c.preprocess0, c.preprocess1):
                if pre:
                    peak = max(peak, elements(pre.cin, pre.size) + elements(pre.cout, pre.out_size) + held)
            peak = max(peak, block_peak(c.cell) + held)
    else:
        for i, stage in enumerate(plan.stages):
            for unit in stage[:1]:  # identical blocks in a stage peak alike
                peak = max(peak, block_peak(unit))
            if i < len(plan.downsamples):
                peak = max(peak, block_peak(plan.downsamples[i]))
    return peak * BYTES_PER_ELEMENT


# -- the public entry point -----------------------------------------------------------------------

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


def analyze(arch_text: str, skeleton: str = "nb201", dataset: str = "cifar10", *, widths=None, depths=None,
            input_size: Optional[int] = None, stem_stride: Optional[int] = None, budget=None,
            path: str = "<string>", arch: Optional[Architecture] = None) -> dict:
    """Everything `build_network` reports, without building a module: fit (or check) widths and cost them."""
    from nader.compiler.fit import Budget, FitError, fit, preset_budget

    skel = skeleton_info(skeleton)
    data = dataset_info(dataset)
    arch = arch or load_architecture(arch_text, skel, stem_stride=stem_stride, path=path)
    depth_values = resolve_depths(skel, depths)
    size = int(input_size) if input_size is not None else data.input_size
    if size < 1:
        raise BuildError(f"input_size must be positive, not {input_size}")
    width_values = resolve_widths(skel, widths)
    info: dict = {}
    if isinstance(budget, dict):
        budget = Budget(**{k: budget.get(k) for k in ("params", "flops", "memory")}, label="given")
    if width_values is None:
        chosen_budget = budget if budget is not None else preset_budget(skel.name, data.name, depth_values)
        try:
            model = network_model(arch, skel, depth_values, size, data.num_classes)
            result = fit(model, chosen_budget)
        except (FitError, CostError) as error:
            raise BuildError(str(error)) from None
        width_values = tuple(result.widths)
        info.update(budget=chosen_budget.to_json(), binding=result.binding_text, fit=result.to_json())
    plan = make_plan(arch, width_values, depth_values, size, data.num_classes, skel)
    broken = [where for c, where in plan_constraints(arch, plan) if not constraint_holds(c, None)]
    if broken:
        raise BuildError(f"widths {list(width_values)} break a constraint: {broken[0]}"
                         + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""))
    try:
        figures = plan_cost(arch, plan).evaluate({})
        nader = plan_cost(arch, plan, "nader").evaluate({})
    except CostError as error:
        raise BuildError(f"cannot cost the network: {error}") from None
    base = {
        "skeleton": skel.name, "dataset": data.name, "params": figures.params, "flops": figures.flops,
        "macs": figures.macs, "nader_flops": nader.flops, "memory": peak_memory(arch, plan), "widths": list(width_values),
        "depths": list(depth_values), "num_classes": data.num_classes, "input_size": size,
        "stem_stride": arch.stem_stride, "notes": list(arch.notes),
    }
    base.update(info)
    base["_plan"] = plan
    base["_arch"] = arch
    return base


def build_network(arch_text: str, skeleton: str = "nb201", dataset: str = "cifar10", *, widths=None, depths=None,
                  input_size: Optional[int] = None, stem_stride: Optional[int] = None, budget=None):
    """Build a whole network from an architecture file's text.

    Returns `(module, info)`; `info` holds params, flops (thop convention), macs, memory (peak
    activation bytes), widths, depths, num_classes, input_size, stem_stride, notes (e.g. that the
    skeleton's standard stem stands in for a missing one), and when the widths were fitted, the
    budget and which of its limits binds. Raises BuildError for invalid input.
    """
    info = analyze(arch_text, skeleton, dataset, widths=widths, depths=depths, input_size=input_size,
                   stem_stride=stem_stride, budget=budget)
    plan, arch = info.pop("_plan"), info.pop("_arch")
    module = assemble(arch, plan)
    return module, info


# -- PyTorch assembly ------------------------------------------------------------------------------

def assemble(arch: Architecture, plan: Plan):
    """The nn.Module of a plan with concrete widths."""
    from nader.compiler.backends import torch_backend

    modules = _torch_classes()

    def build(unit: BlockUnit):
        report = arch.report_at(unit.part, unit.size[0])
        try:
            return torch_backend.build_torch(arch.block(unit.part), _width_int(unit.C, None),
                                             _width_int(unit.dim, None), role=report.role,
                                             stem_stride=arch.stem_stride, report=report, input_size=unit.size[0])
        except torch_backend.BuildError as error:
            raise BuildError(str(error), getattr(error, "diagnostics", ())) from None

    def layer(unit: Optional[LayerUnit]):
        if unit is None:
            return modules["Identity"]()
        cin, cout = _width_int(unit.cin, None), _width_int(unit.cout, None)
        if unit.kind == "relu_conv_bn":
            return modules["relu_conv_bn"](cin, cout)
        return modules["FactorizedReduce"](cin, cout)

    stem = build(plan.stem)
    classes = plan.num_classes
    last = _width_int(plan.widths[-1], None)
    if plan.skeleton.cells:
        cells = [modules["Cell"](layer(c.preprocess0), layer(c.preprocess1), build(c.cell), c.reduction)
                 for c in plan.cells]
        return modules["DartsNetwork"](stem, cells, last, classes)
    stages = [[build(u) for u in stage] for stage in plan.stages]
    downs = [build(u) for u in plan.downsamples]
    return modules["StagedNetwork"](stem, stages, downs, last, classes, lastact=plan.lastact is not None)


_TORCH_CLASSES: dict = {}


def _torch_classes() -> dict:
    """The skeletons' nn.Module classes, defined on first use so that costing never imports torch.

    They are published as attributes of this module (see `__getattr__`), so pickling works.
    """
    if _TORCH_CLASSES:
        return _TORCH_CLASSES
    from torch import nn

    from nader.compiler.backends.torch_support import Cell, DartsNetwork, FactorizedReduce, StagedNetwork, relu_conv_bn

    for cls in (StagedNetwork, FactorizedReduce, Cell, DartsNetwork):
        _TORCH_CLASSES[cls.__name__] = cls
    _TORCH_CLASSES["relu_conv_bn"] = relu_conv_bn
    _TORCH_CLASSES["Identity"] = nn.Identity
    return _TORCH_CLASSES


def __getattr__(name: str):
    if name in ("StagedNetwork", "FactorizedReduce", "Cell", "DartsNetwork"):
        return _torch_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Architecture", "BuildError", "DATASETS", "NetworkModel", "Plan", "SKELETONS", "STANDARD_BLOCKS", "Skeleton",
           "analyze", "architecture_from_program", "assemble", "build_network", "dataset_info", "load_architecture",
           "make_plan", "network_model", "peak_memory", "plan_constraints", "plan_cost", "skeleton_info"]
