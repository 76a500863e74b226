"""`nadc cost`: fit each architecture to a budget (or cost given widths) without building it.

One line per file: widths, depths, parameters, FLOPs (thop's convention, as NADER reports
them) and the budget that binds. `--format json` prints one object per file with plain
counts. Exit status 1 when any file fails verification or fits no budget, 2 for usage errors.
Nothing here imports torch.
"""
from __future__ import annotations

import json
from typing import Optional

import click

from nader.inputs.cli import options
from nader.inputs.settings import Choice, Integer, Real, Setting, Text, output_format

from nader.compiler.commands.common import DEPTHS, INPUT_SIZE, STEM_STRIDE, WIDTHS, load
from nader.compiler.reporting import note_lines


def _m(value: int) -> str:
    return f"{value / 1e6:.4f} M"


def _g(value: int) -> str:
    return f"{value / 1e9:.4f} G"


@click.command("cost")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@options(Setting("--network", Choice(["nb201", "nas-bench-201", "imagenet", "darts"], case_sensitive=True),
                 "Skeleton to place the blocks in.", name="skeleton", default="nb201"),
         Setting("--dataset", Text(), shown_default="cifar10; imagenet for the imagenet skeleton",
                 help="cifar10, cifar100, imagenet16-120, imagenet or digits. Sets the input size, classes and budget "
                      "preset."),
         WIDTHS.but(help="Evaluate these stage widths (or one base width) instead of fitting."),
         DEPTHS.but(help="Blocks per stage (darts: normal cells per stage), e.g. 5,5,5."),
         INPUT_SIZE.but(help="Input resolution instead of the dataset's."),
         STEM_STRIDE.but(help="Stride of the stem.", shown_default="the stride the stem block has"),
         Setting("--max-params", Real(hi=1e15, positive=True), "Parameter budget in millions (replaces the preset's)."),
         Setting("--max-flops", Real(hi=1e15, positive=True),
                 "FLOPs budget in G, thop convention (replaces the preset's)."),
         Setting("--max-memory", Real(hi=1e15, positive=True), shown_default="half of this machine's RAM",
                 help="Training memory budget in MiB: a training step's activations, parameters, gradients and "
                      "optimizer state at --batch-size."),
         Setting("--batch-size", Integer(1, 1 << 20), "Batch size the memory budget is checked at.",
                 shown_default="256, NAS-Bench-201's"),
         output_format("text", "json"))
def cost_cmd(files, skeleton, dataset, widths, depths, input_size, stem_stride, max_params, max_flops, max_memory,
             batch_size, fmt):
    """Fit FILEs' networks to the budget and print widths, parameters, FLOPs and the binding budget.

    \b
    nadc cost ARCH.nad --network nb201 --dataset cifar100
    nadc cost blocks/*.txt --network imagenet --dataset cifar100 --format json
    nadc cost ARCH.nad --widths 16 --depths 5,5,5      (evaluate, no fit)

    FLOPs follow thop's profile convention (what NADER reports). A network whose training step
    needs more memory than the budget is refused (exit 1). See the documentation page "Networks:
    skeletons, cost model, budget fitting".
    """
    from nader.compiler.fit import DEFAULT_BATCH_SIZE, Budget, FitError, preset_budget
    from nader.runtime.memory import default_memory_budget
    from nader.compiler.architecture import architecture_from_program
    from nader.compiler.errors import BuildError
    from nader.compiler.skeletons import skeleton_info
    from nader.compiler.datasets import dataset_info
    from nader.compiler.network import analyze
    from nader.compiler.plan import resolve_depths, resolve_widths
    from nader.compiler.passes.cost import CostError

    skel = skeleton_info(skeleton)
    try:
        data = dataset_info(dataset or ("imagenet" if skeleton == "imagenet" else "cifar10"))
        width_values = resolve_widths(skel, tuple(widths) if widths else None)
        depth_values = resolve_depths(skel, tuple(depths) if depths else None)
    except BuildError as error:
        raise click.UsageError(str(error)) from None
    if width_values is not None and (max_params or max_flops):
        raise click.UsageError("--max-params/--max-flops set a budget to fit; drop --widths to fit")
    memory = int(max_memory * 2 ** 20) if max_memory else default_memory_budget("cpu")[0]
    batch = batch_size or DEFAULT_BATCH_SIZE
    budget: Optional[Budget] = Budget(memory=memory, label="command line", batch_size=batch)  # widths given: a check
    if width_values is None:
        try:
            base: Optional[Budget] = preset_budget(skel.name, data.name, depth_values)
        except FitError:
            base = None
        if max_params or max_flops:
            base = base or Budget()
            budget = Budget(int(max_params * 1e6) if max_params else base.params,
                            int(max_flops * 1e9) if max_flops else base.flops, memory, "command line", batch)
        else:  # no preset: the fit names what to give
            budget = base.with_memory(memory, batch) if base is not None else None
    results = load(files)
    failed = False
    objects = []
    for parsed in results:
        path = parsed.program.path
        obj: dict = {"file": path, "ok": False}
        try:
            if not parsed.program.blocks:
                errors = [d for d in parsed.diagnostics if d.is_error]
                raise BuildError(errors[0].message if errors else "the file holds no block")
            arch = architecture_from_program(parsed.program, parsed.diagnostics, skel, stem_stride=stem_stride)
            info = analyze("", skel.name, data.name, widths=width_values, depths=depth_values, input_size=input_size,
                           budget=budget, arch=arch)
        except (BuildError, CostError) as error:
            failed = True
            obj["error"] = str(error)
            if fmt == "text":
                click.echo(f"{path}: error: {error}", err=True)
            objects.append(obj)
            continue
        info.pop("_plan")
        info.pop("_arch")
        fit = info.pop("fit", None)
        obj.update(ok=True, **info)
        obj.setdefault("binding", None)
        if fit:
            obj["base_width"] = fit["base_width"]
        objects.append(obj)
        if fmt == "text":
            binding = f"  binding {info['binding']}" if info.get("binding") else ""
            stride = f"  stem stride {info['stem_stride']}" if info["stem_stride"] != skel.stem_stride else ""
            budget_text = ""
            if info.get("budget"):
                budget_text = f" ({Budget(**info['budget']).describe()})"
            for line in note_lines(path, info):
                click.echo(line, err=True)
            training = info["training_memory"]
            click.echo(f"{path}: {skel.name}/{data.name} widths {','.join(map(str, info['widths']))} "
                       f"depths {','.join(map(str, info['depths']))}{stride}  params {_m(info['params'])} ({info['params']:,})  "
                       f"FLOPs {_g(info['flops'])} ({info['flops']:,})  training memory "
                       f"{training['total'] / 2**20:,.0f} MiB at batch {training['batch_size']}{binding}{budget_text}")
    if fmt == "json":
        click.echo(json.dumps(objects, indent=2))
    raise SystemExit(1 if failed else 0)
