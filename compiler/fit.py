"""Budget fitting: the largest base width whose network meets every budget and constraint.

NADER fits widths by instantiating PyTorch models and profiling them with thop
inside a binary search (about 2 s per architecture). Here the network's cost is
an exact polynomial in the base width `x` (`network.network_model`), so each
probe is a few polynomial evaluations:

1. When every cost polynomial is provably non-decreasing in `x` (positive
   coefficients over non-decreasing atoms, checked symbolically), the largest
   width within budget is found by doubling then bisection, and the fit then
   steps down to the largest width that also meets every divisibility and
   positivity constraint of every block instance (each block with its own C:
   later stages run at 2C, 4C, ...). Budgets still hold there by monotonicity.
2. Otherwise every width from `MAX_SCAN` down to 1 is checked.

Memory is a limit, not a target: the widths are the ones parameters and FLOPs give (NADER's
protocol), and a network whose training step would not fit in `Budget.memory` at those widths
is refused (`FitError`, over budget) rather than narrowed until it does.

The result is deterministic. The *binding* budget is the one the next larger
width meeting the constraints would exceed.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

from nader.compiler.errors import BuildError
from nader.compiler.network_cost import NetworkModel
from nader.runtime.presets import get_preset

MAX_WIDTH = 1 << 14  # the largest base width the bisection considers
MAX_SCAN = 4096  # the range of the exhaustive scan for non-monotone costs
#: The batch a memory budget is checked at unless told: the NAS-Bench-201 protocol's.
DEFAULT_BATCH_SIZE = get_preset("nb201").batch_size


class FitError(BuildError):
    """No width satisfies the budget and the constraints."""


@dataclass(frozen=True)
class Budget:
    """Upper limits; None means unlimited. FLOPs in thop's convention; memory in bytes, a training
    step's peak at `batch_size` (`network_cost.training_memory`)."""

    params: Optional[int] = None
    flops: Optional[int] = None
    memory: Optional[int] = None
    label: str = ""
    batch_size: int = DEFAULT_BATCH_SIZE

    def empty(self) -> bool:
        return self.params is None and self.flops is None and self.memory is None

    def with_memory(self, memory: Optional[int], batch_size: Optional[int] = None) -> "Budget":
        return replace(self, memory=memory, batch_size=batch_size or self.batch_size)

    def to_json(self) -> dict:
        return {"params": self.params, "flops": self.flops, "memory": self.memory, "label": self.label,
                "batch_size": self.batch_size}

    def describe(self) -> str:
        parts = []
        if self.params is not None:
            parts.append(f"params <= {self.params / 1e6:g} M")
        if self.flops is not None:
            parts.append(f"FLOPs <= {self.flops / 1e9:g} G")
        if self.memory is not None:
            parts.append(f"training memory <= {self.memory / 2**20:,.0f} MiB at batch {self.batch_size}")
        return ", ".join(parts) or "no budget"


M, G = 10 ** 6, 10 ** 9

# NADER's targets (ModelGen.get_width_and_depth). NAS-Bench-201: "at most 1.5 M parameters,
# 0.2 GFLOPs on CIFAR, 0.05 GFLOPs on ImageNet16-120". DARTS: 3.84 M parameters for 20 cells,
# 1.2 M for 8 (its 5 GFLOPs target never binds). ImageNet-1k: 30 M parameters, 5.4 GFLOPs.
PRESETS: dict[tuple[str, str], Budget] = {
    ("nb201", "cifar10"): Budget(int(1.5 * M), int(0.2 * G), label="NAS-Bench-201 CIFAR-10"),
    ("nb201", "cifar100"): Budget(int(1.5 * M), int(0.2 * G), label="NAS-Bench-201 CIFAR-100"),
    ("nb201", "imagenet16-120"): Budget(int(1.5 * M), int(0.05 * G), label="NAS-Bench-201 ImageNet16-120"),
    ("nb201", "digits"): Budget(int(0.1 * M), int(0.01 * G), label="digits smoke test"),
    ("imagenet", "imagenet"): Budget(30 * M, int(5.4 * G), label="NADER ImageNet-1k"),
    ("imagenet", "cifar10"): Budget(27 * M, None, label="NADER ImageNet-style on CIFAR (estimated)"),
    ("imagenet", "cifar100"): Budget(27 * M, None, label="NADER ImageNet-style on CIFAR (estimated)"),
    ("imagenet", "digits"): Budget(int(0.1 * M), int(0.01 * G), label="digits smoke test"),
    ("darts", "digits"): Budget(int(0.1 * M), int(0.01 * G), label="digits smoke test"),
}
# NAS-Bench-201's own network (its BN-ReLU before pooling added) has the nb201 budgets.
PRESETS.update({("nas-bench-201", d): b for (s, d), b in list(PRESETS.items()) if s == "nb201"})
DARTS_PARAMS = {20: int(3.84 * M), 8: int(1.2 * M)}


def preset_budget(skeleton: str, dataset: str, depths: Sequence[int] = ()) -> Budget:
    """The budget NADER used for a skeleton and dataset (DARTS: by cell count)."""
    if skeleton == "darts" and dataset in ("cifar10", "cifar100"):
        cells = sum(depths) + 2
        if cells in DARTS_PARAMS:
            return Budget(DARTS_PARAMS[cells], None, label=f"DARTS {cells} cells")
        raise FitError(f"no budget preset for the darts skeleton with {cells} cells (NADER's are 8 and 20); "
                       f"give widths or a budget")
    budget = PRESETS.get((skeleton, dataset))
    if budget is None:
        raise FitError(f"no budget preset for the {skeleton} skeleton on {dataset}; give widths or a budget")
    return budget


@dataclass
class FitResult:
    x: int  # the base width
    widths: list[int]
    params: int
    flops: int
    macs: int
    memory: Optional[int]
    budget: Budget
    binding: list[str]  # budgets the next valid width would exceed ("max-width" at the search limit)
    method: str  # "bisection" | "scan"
    evaluations: int
    skipped: list[str] = field(default_factory=list)  # why larger in-budget widths were rejected

    @property
    def binding_text(self) -> str:
        return ",".join(self.binding) if self.binding else "none"

    def to_json(self) -> dict:
        return {"base_width": self.x, "widths": self.widths, "binding": self.binding, "method": self.method,
                "evaluations": self.evaluations, "budget": self.budget.to_json(),
                "skipped": self.skipped[:3]}


class _Probe:
    def __init__(self, model: NetworkModel, budget: Budget):
        self.model, self.budget = model, budget
        self.count = 0
        self._cache: dict[int, list[str]] = {}

    def over(self, x: int) -> list[str]:
        """The budgets width x exceeds."""
        cached = self._cache.get(x)
        if cached is not None:
            return cached
        self.count += 1
        b = self.budget
        figures = self.model.figures(x)
        over = []
        if b.params is not None and figures.params > b.params:
            over.append("params")
        if b.flops is not None and figures.flops > b.flops:
            over.append("flops")
        self._cache[x] = over
        return over

    def fits(self, x: int) -> bool:
        return not self.over(x)


def fit(model: NetworkModel, budget: Budget, *, max_width: int = MAX_WIDTH) -> FitResult:
    """The largest base width meeting `budget` and every constraint of `model`."""
    if budget.params is None and budget.flops is None:
        raise FitError("the budget sets no limit on parameters or FLOPs, which fit the widths; give one of "
                       "them (or fixed widths)")
    probe = _Probe(model, budget)
    monotone = model.monotone
    if monotone:
        method = "bisection"
        x = _largest_in_budget(probe, max_width)
        if x == 0:
            raise FitError(_too_small(model, probe, budget))
        start = x
        while x >= 1 and not model.feasible(x):
            x -= 1
        if x == 0:
            raise FitError(_no_valid_width(model, start, budget))
        skipped = model.broken(start) if start != x else []
    else:
        method = "scan"
        x, skipped = 0, []
        for candidate in range(min(max_width, MAX_SCAN), 0, -1):
            if probe.fits(candidate) and model.feasible(candidate):
                x = candidate
                break
            if probe.fits(candidate) and not skipped:
                skipped = model.broken(candidate)
        if x == 0:
            if not probe.fits(1):
                raise FitError(_too_small(model, probe, budget))
            raise FitError(_no_valid_width(model, MAX_SCAN, budget))
    binding = _binding(model, probe, x, max_width if monotone else min(max_width, MAX_SCAN))
    figures = model.figures(x)
    memory = None
    if budget.memory is not None:
        memory = model.training_memory(x, budget.batch_size).total
        if memory > budget.memory:
            raise FitError(over_memory(memory, budget))
    return FitResult(x, model.widths(x), figures.params, figures.flops, figures.macs, memory, budget, binding,
                     method, probe.count, skipped)


def over_memory(memory: int, budget: Budget) -> str:
    """The refusal of a network whose training step needs `memory` bytes."""
    return (f"over the memory budget: a training step at batch {budget.batch_size} needs about "
            f"{memory / 2**20:,.0f} MiB, the budget is {budget.memory / 2**20:,.0f} MiB; make the block "
            f"cheaper in activations (fewer or narrower nodes), or raise the budget (--max-memory)")


def _largest_in_budget(probe: _Probe, max_width: int) -> int:
    if not probe.fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= max_width and probe.fits(hi):
        lo, hi = hi, hi * 2
    if hi > max_width:
        if probe.fits(max_width):
            return max_width
        hi = max_width
    while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        if probe.fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _binding(model: NetworkModel, probe: _Probe, x: int, limit: int) -> list[str]:
    """The budgets that stop the next larger width meeting the constraints."""
    for y in range(x + 1, limit + 1):
        if model.feasible(y):
            return probe.over(y) or ["max-width"]
    return ["max-width"]


def _too_small(model: NetworkModel, probe: _Probe, budget: Budget) -> str:
    figures = model.figures(1)
    over = ", ".join(probe.over(1))
    return (f"no width fits the budget ({budget.describe()}): even base width 1 exceeds {over} "
            f"({figures.params:,} parameters, {figures.flops:,} FLOPs)")


def _no_valid_width(model: NetworkModel, start: int, budget: Budget) -> str:
    broken = model.broken(start)
    detail = f"; at width {start}: {broken[0]}" if broken else ""
    return (f"no width up to {start} meets the blocks' constraints within the budget ({budget.describe()})"
            f"{detail}")


__all__ = ["Budget", "FitError", "FitResult", "MAX_WIDTH", "PRESETS", "fit", "preset_budget"]
