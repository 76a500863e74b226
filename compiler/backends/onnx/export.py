"""Packaging ONNX models: `nadc --emit onnx` (`emit`), one block (`export_block`), a network (`export_network`).

Each builds the PyTorch module first, seeded so that the output is reproducible, then lowers
it with its weights and runs the ONNX checker and strict shape inference on the result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import onnx

from nader.compiler.architecture import Architecture, architecture_from_program
from nader.compiler.backends.errors import EmitError
from nader.compiler.backends.onnx.block import block_to_onnx
from nader.compiler.backends.onnx.graph import DEFAULT_OPSET, OnnxLoweringError, check_model
from nader.compiler.backends.onnx.network import network_to_onnx
from nader.compiler.errors import BuildError
from nader.compiler.network import analyze, assemble
from nader.compiler.passes.contract import SQUARE, Domain
from nader.compiler.passes.verify import verify_block
from nader.compiler.plan import Plan
from nader.compiler.reporting import Emitted, note_lines
from nader.compiler.skeletons import skeleton_info
from nader.dsl.ir import Block, Role

DEFAULT_WIDTH = 64


def emit_onnx(parsed, options) -> Emitted:
    """`nadc FILE --emit onnx -o out.onnx`.

    Without `--network`, the first block of the file is exported (NADER's files hold a base block
    first, then its stem and downsample blocks); when the file holds more, a note on stderr names
    the ones left out. With `--network SKELETON` the whole network is exported.

    Widths: a block is built at input width `--in-channels`, else the first of `--widths`, else
    64 (or the smallest larger width meeting its constraints); a stem takes 3 channels and outputs
    the first of `--widths` (else `--in-channels`, else that default).
    `--input-size S` fixes H = W = S in the model; without it they stay symbolic.
    """
    if getattr(options, "network", None):
        return _emit_network(parsed, options)
    blocks = parsed.program.blocks
    if not blocks:
        raise EmitError(f"{parsed.program.path}: no block to export")
    block = blocks[0]
    notes = ()
    if len(blocks) > 1:
        others = ", ".join(f"`{b.name}`" for b in blocks[1:])
        notes = (f"nadc: note: {parsed.program.path}: exporting the first block `{block.name}` only; "
                 f"an ONNX model holds one graph ({others} left out; use --network to export a network, "
                 f"or put a block in a file of its own)",)
    widths = getattr(options, "widths", None) or ()
    role = options.role or block.inferred_role()
    if role is Role.STEM:  # a stem takes 3 channels; its output is the first stage's width
        in_channels, out_channels = 3, (widths[0] if widths else options.in_channels)
    else:
        in_channels, out_channels = options.in_channels or (widths[0] if widths else None), None
    try:
        model = export_block(block, role=role, stem_stride=options.stem_stride, in_channels=in_channels,
                             out_channels=out_channels, input_size=options.input_size, domain=options.domain,
                             file=parsed.program.path)
    except EmitError as error:  # the note still goes before the error, as nadc printed it
        error.notes = notes
        raise
    except OnnxLoweringError as error:
        failure = EmitError(str(error), error.diagnostics)
        failure.notes = notes
        raise failure from None
    return Emitted(model.SerializeToString(), notes)


def export_block(block: Block, *, role: Optional[Role] = None, stem_stride: int = 1,
                 in_channels: Optional[int] = None, out_channels: Optional[int] = None,
                 input_size: Optional[int] = None, opset: int = DEFAULT_OPSET, seed: int = 0,
                 domain: Domain = SQUARE, file: str = "<string>") -> onnx.ModelProto:
    """Builds the PyTorch module (seeded, so the output is reproducible) and exports it.

    Widths not given default to 64, or to the smallest width above it that meets the block's
    constraints (`C % 128 == 0` gives 128); a stem's input width is always 3. `file` names the
    block's file in errors.
    """
    import torch

    from nader.compiler.backends import torch_backend

    report = verify_block(block, role=role, stem_stride=stem_stride, domain=domain, file=file)
    role = report.role
    if role is Role.STEM:
        c_in, c_out = 3, out_channels or _default_width(report)
    else:
        c_in, c_out = in_channels or _default_width(report), out_channels
    if report.ok and report.shapes.resolution_bound and input_size is None and report.domain.size is None:
        raise OnnxLoweringError(f"block `{block.name}` is tied to its input resolution (node "
                                f"{report.shapes.resolution_bound[0]} learns over a spatial axis, NAD317): "
                                f"give the size to export it for with --input-size")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            module = torch_backend.build_torch(block, c_in, c_out, role=role, stem_stride=stem_stride, report=report,
                                               input_size=input_size)
        except BuildError as error:
            raise OnnxLoweringError(str(error), error.diagnostics) from None
    module.eval()
    model = block_to_onnx(block, module, role=role, stem_stride=stem_stride, in_channels=c_in,
                          out_channels=c_out, opset=opset, input_size=input_size)
    check_model(model)
    return model


def _default_width(report, limit: int = 4096) -> int:
    """DEFAULT_WIDTH, or the smallest larger width meeting the block's width constraints."""
    if report.shapes is None or report.shapes.failed:
        return DEFAULT_WIDTH
    constraints = [c for c in report.shapes.constraints if c.size.free_symbols() <= {"C", "dim"}]
    for width in range(DEFAULT_WIDTH, limit + 1):
        sizes = report.shapes.sizes(width)
        if all(c.holds(sizes) for c in constraints):
            return width
    return DEFAULT_WIDTH  # build_torch reports the constraint


# -- networks --------------------------------------------------------------------------------

@dataclass
class BuiltNetwork:
    """A network built from a parsed architecture file: what ONNX lowers it from, and the module."""

    arch: Architecture
    plan: Plan
    module: object  # the nn.Module of `network.assemble(arch, plan)`, in eval mode
    info: dict  # what `network.analyze` reports


def build_for_export(parsed, *, skeleton: str, dataset: Optional[str] = None, widths=None, depths=None,
                     input_size: Optional[int] = None, stem_stride: Optional[int] = None,
                     seed: int = 0) -> BuiltNetwork:
    """Fits (or checks) the widths of a parsed architecture file's network and builds it, seeded."""
    import torch

    try:
        skel = skeleton_info(skeleton)
        dataset = dataset or ("imagenet" if skel.name == "imagenet" else "cifar10")
        arch = architecture_from_program(parsed.program, parsed.diagnostics, skel, stem_stride=stem_stride)
        info = analyze("", skel.name, dataset, widths=widths, depths=depths, input_size=input_size, arch=arch)
        plan, arch = info.pop("_plan"), info.pop("_arch")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = assemble(arch, plan)
    except BuildError as error:
        raise OnnxLoweringError(str(error), error.diagnostics) from None
    module.eval()
    return BuiltNetwork(arch, plan, module, info)


def export_network(parsed, *, skeleton: str, dataset: Optional[str] = None, widths=None, depths=None,
                   input_size: Optional[int] = None, stem_stride: Optional[int] = None,
                   opset: int = DEFAULT_OPSET, seed: int = 0, fix_input_size: bool = False):
    """Builds the network of a parsed architecture file (seeded) and exports it; returns (model, module, info)."""
    built = build_for_export(parsed, skeleton=skeleton, dataset=dataset, widths=widths, depths=depths,
                             input_size=input_size, stem_stride=stem_stride, seed=seed)
    arch, plan, info = built.arch, built.plan, built.info
    name = f"{arch.base.name} on {plan.skeleton.name}"
    # Symbolic H and W only where every block runs at every size with one set of weights; a network
    # with square-only or resolution-bound blocks is fixed to the input size it was built for.
    fix_input_size = fix_input_size or not arch.runs_at_any_size()
    model = network_to_onnx(arch, plan, built.module.state_dict(), opset=opset, input_size=info["input_size"] if fix_input_size else None,
                            info={k: v for k, v in info.items() if k in
                                  ("skeleton", "dataset", "widths", "depths", "num_classes", "input_size",
                                   "stem_stride", "params", "flops")}, name=name)
    check_model(model)
    return model, built.module, info


def _emit_network(parsed, options) -> Emitted:
    # --stem-stride defaults to 1 on the command line; 1 then means "the stride the stem has".
    stride = options.stem_stride if options.stem_stride and options.stem_stride != 1 else None
    try:
        model, _, info = export_network(parsed, skeleton=options.network, dataset=options.dataset,
                                        widths=options.widths, depths=options.depths, input_size=options.input_size,
                                        stem_stride=stride)
    except OnnxLoweringError as error:
        raise EmitError(str(error), error.diagnostics) from None
    return Emitted(model.SerializeToString(), tuple(note_lines(parsed.program.path, info, getattr(options, "recorded", None))))
