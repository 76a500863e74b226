"""Whole networks: fit or check the widths of a plan, cost it, and assemble it into PyTorch.

A *skeleton* (`skeletons.py`) places the blocks of an architecture (`architecture.py`: the base block
`X`, the stem `X_stem` and the downsample block `X_downsample`, or a DARTS cell pair):

* `nb201`: stem (stride 1), three stages of N=5 base blocks at widths C, 2C, 4C,
  a downsample block between stages, global average pooling, a linear classifier.
* `imagenet`: the same with four stages (C, 2C, 4C, 8C), depths 2,3,5,2 by
  default, and an ImageNet-style stem (stride 4 by default; see `stem_stride`).
* `darts`: stem, then 8 or 20 two-input cells with reduction cells at one and two
  thirds; each cell's inputs are preprocessed to its width as in DARTS.

Everything a network is made of is first written down as a `Plan` (`plan.py`: units
with their widths and resolutions; every block unit is verified at its stage's concrete
resolution when the plan is made). Its analytic cost and memory are in `network_cost.py`,
the datasets' input sizes and classes in `datasets.py`. This module ties them together
(`analyze`, `build_network`) and builds the nn.Module of a plan (`assemble`).

This module does not import torch until a module is built.
"""
from __future__ import annotations

from typing import Optional

from nader.compiler.architecture import Architecture, load_architecture
from nader.compiler.datasets import dataset_info
from nader.compiler.errors import BuildError
from nader.compiler.fit import DEFAULT_BATCH_SIZE, Budget, FitError, fit, over_memory, preset_budget
from nader.compiler.network_cost import (constraint_holds, network_model, peak_memory, plan_constraints, plan_cost,
                                         training_memory)
from nader.compiler.passes.cost import CostError
from nader.compiler.plan import BlockUnit, LayerUnit, Plan, make_plan, resolve_depths, resolve_widths, width_int
from nader.compiler.skeletons import skeleton_info


#: The runtime's spec of `build_network` ("module:function"), what a `Job` names as its builder.
#: A job's id hashes this string, so it never changes: a rename would re-key every stored job.
BUILDER = "nader.compiler.network:build_network"


def analyze(arch_text: str, skeleton: str = "nb201", dataset: str = "cifar10", *, widths=None, depths=None,
            input_size: Optional[int] = None, stem_stride: Optional[int] = None, budget=None,
            path: str = "<string>", arch: Optional[Architecture] = None) -> dict:
    """Everything `build_network` reports, without building a module: fit (or check) widths and cost them.

    A budget's memory limit holds for the training step at its batch size (`FitError` when over).
    """
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
        budget = Budget(**{k: budget.get(k) for k in ("params", "flops", "memory")}, label="given",
                        batch_size=budget.get("batch_size") or DEFAULT_BATCH_SIZE)
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
    batch = budget.batch_size if budget is not None else DEFAULT_BATCH_SIZE
    training = training_memory(arch, plan, batch, params=int(figures.params))
    if budget is not None and budget.memory is not None and training.total > budget.memory:
        raise FitError(over_memory(training.total, budget))
    base = {
        "skeleton": skel.name, "dataset": data.name, "params": figures.params, "flops": figures.flops,
        "macs": figures.macs, "nader_flops": nader.flops, "memory": peak_memory(arch, plan),
        "training_memory": training.to_json(), "widths": list(width_values),
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
    """The nn.Module of a plan with concrete widths; its module paths are the plan's unit names."""
    from torch import nn

    from nader.compiler.backends import torch_backend
    from nader.compiler.backends.torch_support import Cell, DartsNetwork, FactorizedReduce, StagedNetwork, relu_conv_bn

    def build(unit: BlockUnit):
        report = arch.report_at(unit.part, unit.size[0])
        return torch_backend.build_torch(arch.block(unit.part), width_int(unit.C), width_int(unit.dim),
                                         role=report.role, stem_stride=arch.stem_stride, report=report,
                                         input_size=unit.size[0])

    def layer(unit: Optional[LayerUnit]):
        if unit is None:
            return nn.Identity()
        make = relu_conv_bn if unit.kind == "relu_conv_bn" else FactorizedReduce
        return make(width_int(unit.cin), width_int(unit.cout))

    stem = build(plan.stem)
    classes = plan.num_classes
    last = width_int(plan.widths[-1])
    if plan.skeleton.cells:
        cells = [Cell(layer(c.preprocess0), layer(c.preprocess1), build(c.cell), c.reduction) for c in plan.cells]
        return DartsNetwork(stem, cells, last, classes)
    stages = [[build(u) for u in stage] for stage in plan.stages]
    downs = [build(u) for u in plan.downsamples]
    return StagedNetwork(stem, stages, downs, last, classes, lastact=plan.lastact is not None)


__all__ = ["analyze", "assemble", "build_network"]
