"""Standalone PyTorch source: `nadc FILE --emit torch` (`emit`), one class per block, or a whole
network with `--network nb201`.

The file needs only torch: the prelude of the block emitter, one class per
block (`block_source`), the skeleton's helper modules and a `Network` class
whose module tree (and so its `state_dict` keys) is the one `build_network`
returns, so weights load across. Widths are fitted exactly as `build_network`
fits them unless `--widths` is given.
"""
from __future__ import annotations

import pprint
from typing import Optional

from nader.compiler.architecture import Architecture, architecture_from_program
from nader.compiler.backends.errors import EmitError
from nader.compiler.backends.torch_source import SOURCE_PRELUDE
from nader.compiler.errors import BuildError
from nader.compiler.network import analyze
from nader.compiler.passes.verify import verify_block
from nader.compiler.plan import BlockUnit, CellUnit, LayerUnit, Plan, width_int
from nader.compiler.reporting import Emitted, note_lines
from nader.compiler.skeletons import skeleton_info


def _clean(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name)
    return cleaned if cleaned[:1].isalpha() else f"Block_{cleaned}"


class _Classes:
    """One class per block and verdict: a block whose square verdict serves every stage is one class
    (taking `H` where resolution-bound layers need it); one verified per stage is a class per size."""

    def __init__(self, arch: Architecture, plan: Plan):
        from nader.compiler.backends.torch_backend import block_source

        self.arch = arch
        self.names: dict[tuple, str] = {}  # (part, domain) -> class name
        self.sources: list[str] = []
        used: set[str] = {"Network", "Cell", "FactorizedReduce", "DropPath", "StagedNetwork", "DartsNetwork"}
        units = plan.block_units()
        for part in ("base", "stem", "downsample"):
            reports = {}
            for unit in units:
                if unit.part == part:
                    report = arch.report_at(part, unit.size[0])
                    reports.setdefault(report.domain, report)
            for domain, report in reports.items():
                name = _clean(arch.block(part).name) + (f"_{domain.size}" if len(reports) > 1 else "")
                candidate, k = name, 2
                while candidate in used:
                    candidate, k = f"{name}_{k}", k + 1
                used.add(candidate)
                self.names[(part, domain)] = candidate
                self.sources.append(block_source(arch.block(part), report, candidate))

    def call(self, unit: BlockUnit, *args: int) -> str:
        """The constructor call of one block unit."""
        report = self.arch.report_at(unit.part, unit.size[0])
        extra = [str(a) for a in args]
        if report.shapes.resolution_bound and report.domain.size is None:
            extra.append(f"H={unit.size[0]}")
        return f"{self.names[(unit.part, report.domain)]}({', '.join(extra)})"


def _layer_text(unit: Optional[LayerUnit]) -> str:
    if unit is None:
        return "nn.Identity()"
    fn = "relu_conv_bn" if unit.kind == "relu_conv_bn" else "FactorizedReduce"
    return f"{fn}({width_int(unit.cin)}, {width_int(unit.cout)})"


def network_class_source(arch: Architecture, plan: Plan, classes: _Classes) -> str:
    """The `Network` class of a plan with concrete widths: the shared skeleton class, configured."""
    doc = (f'    """{plan.skeleton.name} network: widths {plan.concrete_widths()}, depths {list(plan.depths)}, '
           f'{plan.input_size}x{plan.input_size} input."""')
    stem = classes.call(plan.stem, 3, width_int(plan.stem.dim))
    if plan.skeleton.cells:
        lines = ["class Network(DartsNetwork):", doc, "", f"    def __init__(self, num_classes={plan.num_classes}):",
                 "        super().__init__(", f"            stem={stem},", "            cells=["]
        lines += [f"                {_cell_text(c, classes)}," for c in plan.cells]
        lines += ["            ],"]
    else:
        lines = ["class Network(StagedNetwork):", doc, "", f"    def __init__(self, num_classes={plan.num_classes}):",
                 "        super().__init__(", f"            stem={stem},", "            stages=["]
        for i, stage in enumerate(plan.stages, 1):
            call = classes.call(stage[0], width_int(plan.widths[i - 1])) if stage else "None"
            lines.append(f"                [{call} for _ in range({len(stage)})],")
        lines.append("            ],")
        downsamples = ", ".join(classes.call(d, width_int(d.C), width_int(d.dim)) for d in plan.downsamples)
        lines.append(f"            downsamples=[{downsamples}],")
    lines += [f"            in_features={width_int(plan.fc.cin)},", "            num_classes=num_classes,"]
    if plan.lastact is not None:
        lines += ["            lastact=True,"]
    lines += ["        )"]
    return "\n".join(lines) + "\n"


def _cell_text(c: CellUnit, classes: _Classes) -> str:
    return (f"Cell({_layer_text(c.preprocess0)}, {_layer_text(c.preprocess1)}, {classes.call(c.cell, width_int(c.cell.C))}, "
            f"{c.reduction})")


def network_source(arch: Architecture, plan: Plan, info: dict) -> str:
    """The whole standalone file."""
    classes = _Classes(arch, plan)
    summary = {k: v for k, v in info.items() if not k.startswith("_") and k != "fit"}
    size = plan.input_size
    header = (f'"""Generated by nadc from {arch.path}: the {plan.skeleton.name} network on {info["dataset"]}.\n\n'
              f"Widths {info['widths']}, depths {info['depths']}, {info['params']:,} parameters, "
              f"{info['flops']:,} FLOPs (thop convention).\nNeeds only torch: `Network()` builds it.\n\"\"\"\n")
    tail = (f"\n\nNETWORK_INFO = {pprint.pformat(summary, width=100)}\n\n\n"
            "def build(num_classes=None):\n"
            "    return Network() if num_classes is None else Network(num_classes)\n\n\n"
            'if __name__ == "__main__":\n'
            "    model = Network().eval()\n"
            f"    print(tuple(model(torch.randn(2, 3, {size}, {size})).shape))\n")
    return (header + SOURCE_PRELUDE + "\n\n" + "\n\n".join(classes.sources) + "\n\n"
            + network_class_source(arch, plan, classes) + tail)


def emit_network_source(parsed, options) -> Emitted:
    """The `--emit torch` emitter when `--network` is given (called by `emit`)."""
    try:
        skel = skeleton_info(options.network)
        dataset = options.dataset or _default_dataset(skel.name)
        # --stem-stride defaults to 1 on the command line; 1 then means "the stride the stem has".
        stride = options.stem_stride if options.stem_stride and options.stem_stride != 1 else None
        arch = architecture_from_program(parsed.program, parsed.diagnostics, skel, stem_stride=stride)
        info = analyze("", skel.name, dataset, widths=options.widths, depths=options.depths,
                       input_size=options.input_size, arch=arch)
    except BuildError as error:
        raise EmitError(str(error), error.diagnostics) from None
    plan, arch = info.pop("_plan"), info.pop("_arch")
    return Emitted(network_source(arch, plan, info), tuple(note_lines(parsed.program.path, info, getattr(options, "recorded", None))))


def emit_torch(parsed, options):
    """`nadc FILE --emit torch`: standalone source, one class per block (or a whole network with --network)."""
    from nader.compiler.backends.torch_backend import block_source

    if options.network:
        return emit_network_source(parsed, options)
    classes = []
    for block in parsed.program.blocks:
        report = verify_block(block, role=options.role, stem_stride=options.stem_stride, file=parsed.program.path,
                              domain=options.domain)
        if not report.ok:
            errors = [d for d in report.diagnostics if d.is_error]
            first = errors[0]
            raise EmitError(f"{first.file}:{first.span.line}:{first.span.col}: block {block.name} does not verify: "
                            f"{first.message} (run `nadc verify` for details)")
        classes.append(block_source(block, report, input_size=options.input_size))
    return f'"""Generated by nadc from {parsed.program.path}. Needs only torch."""\n' + SOURCE_PRELUDE + "\n\n" + "\n\n".join(classes)


def _default_dataset(skeleton: str) -> str:
    return "imagenet" if skeleton == "imagenet" else "cifar10"


__all__ = ["emit_torch", "emit_network_source", "network_class_source", "network_source"]
