"""The analytic model of a whole network: cost, constraints and peak activation memory of a `Plan`.

Block costs come from `passes/cost.py` at each block's concrete resolution; the skeleton's
own layers are costed here in thop's convention. With widths in the base width `x` the
whole network's cost is one polynomial, which makes fitting (`fit.py`) cheap.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Sequence, Union

from nader.compiler.architecture import Architecture
from nader.compiler.passes.cost import (NO_COST, Cost, CostError, Figures, adaptive_avg_pool_cost, bn_cost, conv_cost,
                                        linear_cost, nondecreasing, substitute)
from nader.compiler.passes.symbolic import ONE, Constraint, Poly, ceil_div
from nader.compiler.plan import X, BlockUnit, LayerUnit, Plan, make_plan, width_int
from nader.compiler.skeletons import Skeleton, skeleton_info


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

    def figures(self, x: int) -> Figures:
        return self.cost.evaluate({"x": x})

    def feasible(self, x: int) -> bool:
        return all(constraint_holds(c, x) for c, _ in self.constraints)

    def broken(self, x: Optional[int]) -> list[str]:
        return [where for c, where in self.constraints if not constraint_holds(c, x)]

    def memory(self, x: int) -> int:
        return peak_memory(self.arch, self.plan, x)

    def training_memory(self, x: int, batch_size: int) -> "TrainingMemory":
        return training_memory(self.arch, self.plan, batch_size, x, int(self.figures(x).params))

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


def peak_memory(arch: Architecture, plan: Plan, x: Optional[int] = None) -> int:
    """Estimated peak activation memory (bytes, float32, batch 1) of an inference forward pass.

    Each block's peak comes from a liveness walk over its nodes (`passes/cost.py`); the skeleton
    adds what it keeps alive beside the block (in DARTS, the previous cell's output).
    """
    def elements(width: Poly, size: tuple[int, int]) -> int:
        return width_int(width, x) * size[0] * size[1]

    def block_peak(unit: BlockUnit) -> int:
        sizes = {"B": 1, "C": width_int(unit.C, x), "dim": width_int(unit.dim, x),
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


# -- training memory ----------------------------------------------------------------------------

#: Float32 copies of the parameters a training step holds: weights, gradients and SGD's momentum
#: (the presets' optimizer; Adam would hold two states).
PARAMETER_COPIES = 3


@dataclass(frozen=True)
class TrainingMemory:
    """Estimated peak memory of one training step (bytes, float32) at a batch size."""

    batch_size: int
    saved: int  # activations the forward keeps for the backward
    transient: int  # the forward's largest working set on top of them (the backward's gradients alike)
    parameters: int  # weights, gradients and optimizer state

    @property
    def per_sample(self) -> int:
        return (self.saved + self.transient) // max(1, self.batch_size)

    @property
    def total(self) -> int:
        return self.saved + self.transient + self.parameters

    def to_json(self) -> dict:
        return {"batch_size": self.batch_size, "total": self.total, "activations": self.saved + self.transient,
                "parameters": self.parameters, "per_sample": self.per_sample}


def _layer_saved(unit: LayerUnit, x: Optional[int]) -> int:
    """Elements a skeleton layer keeps for the backward (each tensor it makes counts once)."""
    cin = width_int(unit.cin, x) * unit.size[0] * unit.size[1]
    cout = width_int(unit.cout, x) * unit.out_size[0] * unit.out_size[1]
    return {"relu_conv_bn": cin + 2 * cout, "factorized_reduce": cin + 2 * cout, "bn_relu": 2 * cin,
            "avg_pool": width_int(unit.cout, x), "linear": width_int(unit.cout, x)}[unit.kind]


def training_memory(arch: Architecture, plan: Plan, batch_size: int, x: Optional[int] = None,
                    params: Optional[int] = None) -> TrainingMemory:
    """What training the plan's network keeps alive at once, analytically, like the FLOPs.

    Autograd keeps (nearly) every activation of the forward until the backward has used it, so the
    activations of every block instance and skeleton layer add up, at `batch_size`; the forward's
    own peak (`peak_memory`) stands for the working set on top of them. Parameters count
    `PARAMETER_COPIES` times. `params` saves recomputing the cost when the caller has it.
    """
    saved = 0
    for unit in plan.units():
        if isinstance(unit, BlockUnit):
            sizes = {"B": 1, "C": width_int(unit.C, x), "dim": width_int(unit.dim, x),
                     "H": unit.size[0], "W": unit.size[1]}
            saved += arch.cost(unit.part, size=unit.size[0]).saved_elements(sizes)
        else:
            saved += _layer_saved(unit, x)
    if params is None:
        params = int(plan_cost(arch, plan).evaluate({"x": x} if x is not None else {}).params)
    return TrainingMemory(batch_size, saved * batch_size * BYTES_PER_ELEMENT,
                          peak_memory(arch, plan, x) * batch_size, params * BYTES_PER_ELEMENT * PARAMETER_COPIES)
