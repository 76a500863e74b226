"""Budget fitting (`nader.compiler.fit`): the largest width within budget and constraints.

The fit is checked against an exhaustive scan of the same analytic model, and the
analytic model against thop on the fitted network (see test_cost.py for thop in depth).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from nader.compiler.architecture import load_architecture
from nader.compiler.errors import BuildError
from nader.compiler.fit import PRESETS, Budget, FitError, fit, preset_budget
from nader.compiler.network import build_network
from nader.compiler.network_cost import network_model
from nader.compiler.passes.cost import Figures
from test_network import ARCH, ARCH4, BOTTLE, CELLS

GROUPED = ARCH.replace("5:Conv2d(out_channels=C,kernel_size=3)", "5:Conv2d(out_channels=C,kernel_size=3,groups=6)")


def model_for(text, skeleton="nb201", depths=(5, 5, 5), size=32, classes=10):
    return network_model(load_architecture(text, skeleton), skeleton, depths, size, classes)


def brute_force(model, budget, limit=600):
    """The largest width by checking every width, as the definition says."""
    best = None
    for x in range(1, limit + 1):
        f = model.figures(x)
        if budget.params is not None and f.params > budget.params:
            continue
        if budget.flops is not None and f.flops > budget.flops:
            continue
        if model.feasible(x):
            best = x
    return best


def test_presets_are_nader_budgets():
    """'at most 1.5 M parameters, 0.2 GFLOPs on CIFAR, 0.05 GFLOPs on ImageNet16-120'."""
    assert preset_budget("nb201", "cifar10") == PRESETS[("nb201", "cifar10")]
    for dataset, flops in (("cifar10", 200_000_000), ("cifar100", 200_000_000), ("imagenet16-120", 50_000_000)):
        budget = preset_budget("nb201", dataset)
        assert (budget.params, budget.flops, budget.memory) == (1_500_000, flops, None)
    assert preset_budget("darts", "cifar10", (6, 6, 6)).params == 3_840_000
    assert preset_budget("darts", "cifar10", (2, 2, 2)).params == 1_200_000
    with pytest.raises(FitError, match="no budget preset"):
        preset_budget("darts", "cifar10", (3, 3, 3))


@pytest.mark.parametrize("text,skeleton,depths,budget", [
    (ARCH, "nb201", (5, 5, 5), Budget(1_500_000, 200_000_000)),
    (ARCH, "nb201", (5, 5, 5), Budget(None, 50_000_000)),
    (BOTTLE, "nb201", (5, 5, 5), Budget(1_500_000, 200_000_000)),
    (GROUPED, "nb201", (5, 5, 5), Budget(400_000, None)),
    (ARCH4, "imagenet", (2, 3, 5, 2), Budget(2_000_000, None)),
    (CELLS, "darts", (2, 2, 2), Budget(300_000, None)),
])
def test_fit_is_the_largest_valid_width(text, skeleton, depths, budget):
    model = model_for(text, skeleton, depths)
    result = fit(model, budget)
    assert result.x == brute_force(model, budget)
    assert result.method == "bisection"  # these costs are provably monotone
    figures = model.figures(result.x)
    assert (result.params, result.flops) == (figures.params, figures.flops)
    assert model.feasible(result.x)


def test_constraints_hold_for_every_block_instance():
    result = fit(model_for(GROUPED), Budget(1_500_000, 200_000_000))
    assert result.x % 6 == 0  # groups=6 divides C at the first stage (2C and 4C follow)
    result = fit(model_for(BOTTLE), Budget(1_500_000, 200_000_000))
    assert result.x % 4 == 0 and result.skipped  # the widths above it in budget break C % 4 == 0


def test_binding_budget_is_the_one_the_next_width_exceeds():
    model = model_for(ARCH)
    by_params = fit(model, Budget(300_000, None))
    assert by_params.binding == ["params"]
    assert model.figures(by_params.x + 1).params > 300_000
    by_flops = fit(model, Budget(10 ** 9, 20_000_000))
    assert by_flops.binding == ["flops"]
    both = fit(model, Budget(by_params.params, by_params.flops))
    assert both.x == by_params.x and set(both.binding) == {"params", "flops"}
    unlimited = fit(model, Budget(10 ** 15, None), max_width=64)
    assert unlimited.x == 64 and unlimited.binding == ["max-width"]


def test_memory_is_a_limit_at_the_fitted_widths_not_a_target():
    """Parameters and FLOPs choose the widths; a training step over the memory budget is refused."""
    model = model_for(ARCH)
    free = fit(model, Budget(1_500_000, None))
    needed = model.training_memory(free.x, 256).total
    within = fit(model, Budget(1_500_000, None, needed))
    assert within.x == free.x and within.memory == needed and within.binding == free.binding
    with pytest.raises(FitError, match=r"over the memory budget: a training step at batch 256 needs about"):
        fit(model, Budget(1_500_000, None, needed - 1))
    # The batch decides: a quarter of the batch fits a quarter of the activations.
    assert fit(model, Budget(1_500_000, None, needed // 2, batch_size=64)).x == free.x


def test_memory_alone_fits_no_width():
    with pytest.raises(FitError, match="no limit on parameters or FLOPs"):
        fit(model_for(ARCH), Budget(memory=10 ** 12))


def test_fit_is_deterministic_and_matches_build_network():
    a = fit(model_for(BOTTLE), Budget(1_500_000, 200_000_000))
    b = fit(model_for(BOTTLE), Budget(1_500_000, 200_000_000))
    assert (a.x, a.binding, a.params, a.flops) == (b.x, b.binding, b.params, b.flops)
    _, info = build_network(BOTTLE, "nb201", "cifar10", budget=Budget(1_500_000, 200_000_000))
    assert info["widths"] == a.widths and info["params"] == a.params and info["binding"] == a.binding_text


def test_budget_may_be_a_plain_dict():
    _, info = build_network(ARCH, "nb201", "cifar10", budget={"params": 300_000})
    assert info["params"] <= 300_000 and info["binding"] == "params" and info["budget"]["flops"] is None


def test_no_width_fits():
    with pytest.raises(FitError, match="even base width 1 exceeds params"):
        fit(model_for(ARCH), Budget(100, None))
    with pytest.raises(BuildError, match="no width fits the budget"):
        build_network(ARCH, "nb201", "cifar10", budget=Budget(None, 1000))
    with pytest.raises(FitError, match="sets no limit"):
        fit(model_for(ARCH), Budget())
    never = ARCH.replace("5:Conv2d(out_channels=C,kernel_size=3)", "5:Conv2d(out_channels=C,kernel_size=3,groups=512)")
    with pytest.raises(FitError, match="constraints"):
        fit(model_for(never), Budget(50_000, None))


@dataclass
class _Wavy:
    """A stand-in model whose cost is not monotone in the width: the fit must scan."""

    monotone: bool = False

    def figures(self, x):
        return Figures(params=(x % 7) * 100 + x, flops=0, macs=0)

    def feasible(self, x):
        return x % 2 == 0

    def broken(self, x):
        return [] if x % 2 == 0 else ["odd width"]

    def widths(self, x):
        return [x, 2 * x, 4 * x]


def test_non_monotone_costs_are_scanned():
    budget = Budget(300, None)
    result = fit(_Wavy(), budget)
    assert result.method == "scan"
    expected = max(x for x in range(1, 4097) if (x % 7) * 100 + x <= 300 and x % 2 == 0)
    assert result.x == expected


def test_reference_fit(compat_dir):
    """NADER fits nas-bench-201__resnet_basic to widths [25, 50, 100] on CIFAR-100; FLOPs bind."""
    text = (compat_dir / "blocks" / "nas-bench-201__resnet_basic.txt").read_text(encoding="utf-8")
    model = network_model(load_architecture(text, "nb201"), "nb201", (5, 5, 5), 32, 100)
    result = fit(model, preset_budget("nb201", "cifar100"))
    assert result.widths == [25, 50, 100] and result.binding == ["flops"]
    assert model.figures(26).flops > 200_000_000 >= model.figures(25).flops
