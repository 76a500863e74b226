"""Standalone PyTorch source of a whole network (`nadc ARCH --network nb201 --emit torch`).

The file needs only torch: the prelude of the block emitter, one class per
block (`block_source`), the skeleton's helper modules and a `Network` class
whose module tree (and so its `state_dict` keys) is the one `build_network`
returns, so weights load across. Widths are fitted exactly as `build_network`
fits them unless `--widths` is given.
"""
from __future__ import annotations

import pprint
from typing import Optional

from nader.compiler.network import (Architecture, BuildError, CellUnit, LayerUnit, Plan, analyze,
                                    architecture_from_program, skeleton_info)

SKELETON_PRELUDE = '''

class FactorizedReduce(nn.Module):
    """DARTS' FactorizedReduce: ReLU, two 1x1 stride-2 convolutions (one shifted by a pixel), BN."""

    def __init__(self, C_in, C_out):
        super().__init__()
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.conv_2 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.bn = nn.BatchNorm2d(C_out)

    def forward(self, x):
        x = self.relu(x)
        shifted = x[:, :, 1:, 1:]
        if x.shape[2] % 2 or x.shape[3] % 2:  # odd sizes: pad so both halves are ceil(H/2)
            shifted = nn.functional.pad(shifted, (0, x.shape[3] % 2, 0, x.shape[2] % 2))
        return self.bn(torch.cat([self.conv_1(x), self.conv_2(shifted)], dim=1))


def relu_conv_bn(C_in, C_out):
    """DARTS' preprocessing: ReLU, 1x1 convolution without bias, BN."""
    return nn.Sequential(nn.ReLU(inplace=False), nn.Conv2d(C_in, C_out, 1, stride=1, bias=False),
                         nn.BatchNorm2d(C_out))


class Cell(nn.Module):
    """A two-input cell with DARTS' preprocessing of its inputs to the cell's width."""

    def __init__(self, preprocess0, preprocess1, cell, reduction=False):
        super().__init__()
        self.preprocess0 = preprocess0
        self.preprocess1 = preprocess1
        self.cell = cell
        self.reduction = reduction

    def forward(self, s0, s1):
        return self.cell(self.preprocess0(s0), self.preprocess1(s1))
'''

_STAGED_FORWARD = '''
    def forward(self, x):
        h = self.stem(x)
        for i in range(1, self.num_stages + 1):
            h = getattr(self, f"layer{i}")(h)
            if i < self.num_stages:
                h = getattr(self, f"downsample{i}")(h)
        h = self.avg_pool(h)
        return self.fc(torch.flatten(h, 1))
'''

_DARTS_FORWARD = '''
    def forward(self, x):
        s0 = s1 = self.stem(x)
        for cell in self.cells:
            s0, s1 = s1, cell(s0, s1)
        return self.fc(torch.flatten(self.avg_pool(s1), 1))
'''


def _clean(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name)
    return cleaned if cleaned[:1].isalpha() else f"Block_{cleaned}"


def _class_names(arch: Architecture) -> dict[str, str]:
    names: dict[str, str] = {}
    used: set[str] = {"Network", "Cell", "FactorizedReduce", "DropPath"}
    for part in ("base", "stem", "downsample"):
        name = _clean(arch.block(part).name)
        candidate, k = name, 2
        while candidate in used:
            candidate, k = f"{name}_{k}", k + 1
        used.add(candidate)
        names[part] = candidate
    return names


def _w(width) -> int:
    value = width.evaluate({})
    return value.numerator // value.denominator


def _layer_text(unit: Optional[LayerUnit]) -> str:
    if unit is None:
        return "nn.Identity()"
    fn = "relu_conv_bn" if unit.kind == "relu_conv_bn" else "FactorizedReduce"
    return f"{fn}({_w(unit.cin)}, {_w(unit.cout)})"


def network_class_source(arch: Architecture, plan: Plan, names: dict[str, str]) -> str:
    """The `Network` class of a plan with concrete widths."""
    lines = ["class Network(nn.Module):",
             f'    """{plan.skeleton.name} network: widths {plan.concrete_widths()}, depths {list(plan.depths)}, '
             f'{plan.input_size}x{plan.input_size} input."""', "",
             f"    def __init__(self, num_classes={plan.num_classes}):",
             "        super().__init__()",
             f"        self.stem = {names['stem']}(3, {_w(plan.stem.dim)})"]
    if plan.skeleton.cells:
        lines.append("        self.cells = nn.ModuleList([")
        for c in plan.cells:
            lines.append(f"            {_cell_text(c, names)},")
        lines.append("        ])")
    else:
        lines.append(f"        self.num_stages = {len(plan.stages)}")
        for i, stage in enumerate(plan.stages, 1):
            width = _w(plan.widths[i - 1])
            lines.append(f"        self.layer{i} = nn.Sequential(*[{names['base']}({width}) for _ in range({len(stage)})])")
            if i <= len(plan.downsamples):
                d = plan.downsamples[i - 1]
                lines.append(f"        self.downsample{i} = {names['downsample']}({_w(d.C)}, {_w(d.dim)})")
    lines.append("        self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))")
    lines.append(f"        self.fc = nn.Linear({_w(plan.fc.cin)}, num_classes)")
    body = "\n".join(lines) + "\n"
    return body + (_DARTS_FORWARD if plan.skeleton.cells else _STAGED_FORWARD)


def _cell_text(c: CellUnit, names: dict[str, str]) -> str:
    cls = names["downsample" if c.reduction else "base"]
    return (f"Cell({_layer_text(c.preprocess0)}, {_layer_text(c.preprocess1)}, {cls}({_w(c.cell.C)}), "
            f"{c.reduction})")


def network_source(arch: Architecture, plan: Plan, info: dict) -> str:
    """The whole standalone file."""
    from nader.compiler.backends.torch_backend import SOURCE_PRELUDE, block_source

    names = _class_names(arch)
    parts = ["base", "stem", "downsample"]
    classes = [block_source(arch.block(p), arch.reports[p], names[p]) for p in parts]
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
    return (header + SOURCE_PRELUDE + SKELETON_PRELUDE + "\n\n" + "\n\n".join(classes) + "\n\n"
            + network_class_source(arch, plan, names) + tail)


def emit_network_source(parsed, options) -> str:
    """The `--emit torch` emitter when `--network` is given (called by torch_backend.emit)."""
    from nader.compiler.commands.compile import EmitError

    try:
        skel = skeleton_info(options.network)
        dataset = options.dataset or _default_dataset(skel.name)
        # --stem-stride defaults to 1 on the command line; 1 then means "the stride the stem has".
        stride = options.stem_stride if options.stem_stride and options.stem_stride != 1 else None
        arch = architecture_from_program(parsed.program, parsed.diagnostics, skel, stem_stride=stride)
        info = analyze("", skel.name, dataset, widths=options.widths, depths=options.depths,
                       input_size=options.input_size, arch=arch)
    except BuildError as error:
        raise EmitError(str(error)) from None
    plan, arch = info.pop("_plan"), info.pop("_arch")
    return network_source(arch, plan, info)


def _default_dataset(skeleton: str) -> str:
    return "imagenet" if skeleton == "imagenet" else "cifar10"


__all__ = ["SKELETON_PRELUDE", "emit_network_source", "network_class_source", "network_source"]
