"""PyTorch backend: build an `nn.Module` straight from the IR, or emit standalone source.

Both follow docs/semantics.md and one lowering table, `LOWERINGS`, keyed by
`Op` (`torch_lowerings.py`): each entry turns a node (with its verified input
shapes and concrete channel sizes) into a `Lowered` value holding the leaf
module (if the op has weights or thop counts it), the call the forward pass
makes, and the line of Python that `--emit torch` writes for it (`block_source`;
the file around it, prelude and all, is `network_source.emit`'s). Both run the
table by one walk, an `Interpreter` (`ModuleLowering`, `SourceLowering`). Nothing
is `exec`ed: the built module calls the same closures the source text describes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from nader.dsl.ir import Block, Node, NodeId, Role, id_token
from nader.dsl.ops import Group, Op
from nader.compiler.backends.source_checks import check_lines
from nader.compiler.backends.torch_lowerings import LOWERINGS, LowerContext, Lowered
from nader.compiler.errors import BuildError
from nader.compiler.passes.interpreter import Interpreter
from nader.compiler.passes.shapes import evaluate_shape  # noqa: F401 (importable from here, as before)
from nader.compiler.passes.verify import BlockReport, verify_block


class BlockRuntimeError(RuntimeError):
    """A node failed while running; the message names the `.nad` line it comes from."""


# -- building -------------------------------------------------------------------------

@dataclass
class Step:
    node_id: NodeId
    lowered: Lowered
    inputs: tuple[NodeId, ...]
    where: str  # "file:line: node 3 (`BN`)"


class BlockModule(nn.Module):
    """One block as a module; `forward` takes the block's inputs in terminal order."""

    def __init__(self, block: Block, report: BlockReport, in_channels: int, out_channels: int,
                 input_size: Optional[int] = None):
        super().__init__()
        self.block_name = block.name
        self.role = report.role
        self.in_channels, self.out_channels = in_channels, out_channels
        self.input_size = input_size  # the resolution resolution-bound layers are built for
        self.report = report
        self.layers = nn.ModuleDict()
        shapes = report.shapes
        sizes = dict(shapes.sizes(in_channels, height=input_size or 32, out_width=out_channels,
                                  in_channels=in_channels))
        input_ops = list(shapes.contract.inputs)
        self.input_ids = [next(n.id for n in block.nodes if n.op is op) for op in input_ops]
        walk = ModuleLowering(block, report, sizes, self.layers)
        self.steps: list[Step] = walk.steps
        self.output_id = walk.run()
        self._env_static = {"C": sizes["C"], "dim": sizes["dim"]}

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        if len(inputs) != len(self.input_ids):
            raise TypeError(f"block {self.block_name} takes {len(self.input_ids)} inputs, got {len(inputs)}")
        first = inputs[0]
        env = dict(self._env_static)
        if first.dim() == 4:
            env.update(B=first.shape[0], H=first.shape[2], W=first.shape[3])
        values = dict(zip(self.input_ids, inputs))
        layers = self.layers
        for step in self.steps:
            module = layers[f"n{id_token(step.node_id)}"] if step.lowered.make is not None else None
            try:
                values[step.node_id] = step.lowered.call(module, env, *[values[i] for i in step.inputs])
            except RuntimeError as error:
                raise BlockRuntimeError(f"{step.where}: {error}") from error
        return values[self.output_id]

    def extra_repr(self) -> str:
        size = f", H=W={self.input_size}" if self.input_size else ""
        return f"block={self.block_name}, role={self.role}, C={self.in_channels}, dim={self.out_channels}{size}"


class ModuleLowering(Interpreter):
    """The walk that builds a `BlockModule`: each live node's `Lowered`, its layer made, as a `Step`.

    A node's value is its id (where `forward` keeps its tensor); the walk gives the output's."""

    __slots__ = ("ctx", "report", "layers", "steps", "output_id")

    HANDLERS = LOWERINGS
    HANDLER_NAME = "PyTorch lowering"

    def __init__(self, block: Block, report: BlockReport, sizes: dict, layers: nn.ModuleDict):
        super().__init__(block, report.shapes.order)  # the live nodes: dead ones are dropped
        self.ctx = LowerContext(block, report, sizes)
        self.report, self.layers = report, layers
        self.steps: list[Step] = []
        self.output_id: NodeId = -1

    def input(self, node: Node) -> NodeId:
        return node.id

    def output(self, node: Node, inputs: tuple) -> NodeId:
        self.output_id = inputs[0]
        return inputs[0]

    def apply(self, lower, node: Node, inputs: tuple) -> NodeId:
        self.ctx.node = node
        lowered = lower(self.ctx)
        if lowered.make is not None:
            self.layers[f"n{id_token(node.id)}"] = lowered.make()
        where = f"{self.report.file}:{node.span.line}: node {node.id} (`{node.op_name}`)"
        self.steps.append(Step(node.id, lowered, inputs, where))
        return node.id

    def finish(self) -> NodeId:
        return self.output_id


class SourceLowering(Interpreter):
    """The walk that writes `block_source`: each live node's constructor line into `init` and its
    statements into `fwd`. A node's value is the name of its tensor in `forward` (`x3`)."""

    __slots__ = ("ctx", "file", "init", "fwd")

    HANDLERS = LOWERINGS
    HANDLER_NAME = "PyTorch lowering"

    def __init__(self, block: Block, report: BlockReport, ctx: LowerContext, init: list, fwd: list):
        super().__init__(block, report.shapes.order)  # the live nodes: dead ones are dropped
        self.ctx, self.file, self.init, self.fwd = ctx, report.file, init, fwd

    def _comment(self, node: Node) -> str:
        return f"  # {self.file}:{node.span.line}  {node.source_text()}"

    def input(self, node: Node) -> str:
        return f"x{id_token(node.id)}"

    def output(self, node: Node, inputs: tuple) -> str:
        self.fwd.append(f"        return {inputs[0]}{self._comment(node)}")
        return inputs[0]

    def apply(self, lower, node: Node, inputs: tuple) -> str:
        comment = self._comment(node)
        self.ctx.node = node
        lowered = lower(self.ctx)
        ref = f"self.layers['n{id_token(node.id)}']"
        if lowered.module_source:
            self.init.append(f"        {ref} = {lowered.module_source}{comment}")
        target = f"x{id_token(node.id)}"
        for k, piece in enumerate(_pieces(node.op, list(inputs), target)):
            self.fwd.append(f"        {target} = {lowered.source(piece, ref)}{comment if k == 0 else ''}")
        return target


def _default_out(report: BlockReport, in_channels: int) -> Optional[int]:
    env_dim = report.shapes.contract.env["dim"]
    if report.role is Role.STEM:
        return None
    return int(env_dim.evaluate({"C": in_channels}))


def build_torch(block: Block, in_channels: int, out_channels: Optional[int] = None, *, role: Optional[Role] = None,
                stem_stride: int = 1, report: Optional[BlockReport] = None,
                input_size: Optional[int] = None) -> BlockModule:
    """Build the block as an nn.Module for input width `in_channels` (stem: output width `out_channels`).

    `input_size` is the input's resolution (H = W): a block with resolution-bound layers (NAD317)
    needs it, and only runs at that size; a report verified at a fixed resolution implies it.
    """
    report = report or verify_block(block, role=role, stem_stride=stem_stride)
    if not report.ok:
        errors = [d for d in report.diagnostics if d.is_error]
        first = errors[0] if errors else None
        where = f"{first.file}:{first.span.line}:{first.span.col}: " if first else ""
        raise BuildError(f"block {block.name} does not verify: {where}{first.message if first else 'unknown error'}", errors)
    expected = _default_out(report, in_channels)
    if report.role is Role.STEM:
        if out_channels is None:
            raise BuildError(f"stem {block.name} needs out_channels (the first stage's width)")
        if in_channels != 3:
            raise BuildError(f"stem {block.name} takes 3 input channels, not {in_channels}")
    elif out_channels is not None and out_channels != expected:
        raise BuildError(f"a {report.role} block with C={in_channels} outputs {expected} channels, not {out_channels}")
    out = out_channels if out_channels is not None else expected
    fixed_size = report.domain.size
    if fixed_size is not None and input_size is not None and input_size != fixed_size:
        raise BuildError(f"block {block.name} was verified at {fixed_size}x{fixed_size}, not {input_size}x{input_size}")
    input_size = input_size or fixed_size
    bound = report.shapes.resolution_bound
    if bound and input_size is None:
        raise BuildError(f"block {block.name} is tied to its input resolution (node {bound[0]} learns over a spatial "
                         f"axis, NAD317): give the input size it is built for")
    sizes = report.shapes.sizes(in_channels, height=input_size or 32, out_width=out, in_channels=in_channels)
    known = {"C", "dim", "H", "W"} if input_size else {"C", "dim"}
    width_constraints = [c for c in report.shapes.constraints if c.size.free_symbols() <= known]
    broken = [str(c) for c in width_constraints if not c.holds(sizes)]
    if broken:
        at = f" and H=W={input_size}" if input_size else ""
        raise BuildError(f"block {block.name} cannot be built at C={sizes['C']}, dim={sizes['dim']}{at}: "
                         f"it requires {', '.join(broken)}")
    return BlockModule(block, report, in_channels, out, input_size)  # type: ignore[arg-type]


# -- standalone source ------------------------------------------------------------------

def _class_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name)
    return cleaned if cleaned[:1].isalpha() else f"Block_{cleaned}"


def block_source(block: Block, report: BlockReport, class_name: Optional[str] = None,
                 input_size: Optional[int] = None) -> str:
    """Python source of one class `Name(nn.Module)` with `__init__(self, C, dim)`; state_dict keys match BlockModule.

    A block with resolution-bound layers (NAD317) takes its input resolution too, `H` (keyword,
    default `input_size` when given): the layers are built for it.
    """
    class_name = class_name or _class_name(block.name)
    shapes = report.shapes
    file = report.file
    sizes = dict(shapes.sizes(64, out_width=64 if report.role is Role.STEM else None))
    ctx = LowerContext(block, report, sizes)
    inputs = [next(n.id for n in block.nodes if n.op is op) for op in shapes.contract.inputs]
    dim_default = {Role.BASE: "C", Role.CELL: "C", Role.REDUCTION_CELL: "C", Role.DOWNSAMPLE: "2 * C"}.get(report.role)
    resolution = ""
    if shapes.resolution_bound and report.domain.size is None:
        resolution = f", *, H={input_size}" if input_size else ", *, H"
    init = [f"class {class_name}(nn.Module):",
            f'    """Block {block.name} ({report.role}) from {file}; generated by nadc."""', "",
            f"    def __init__(self, C{', dim=None' if dim_default else ', dim'}{resolution}):",
            "        super().__init__()"]
    if report.role is Role.STEM:
        init.append("        C = 3")
    else:
        init.append(f"        dim = {dim_default} if dim is None else dim")
    height = "H" if resolution else (str(report.domain.size) if report.domain.size is not None else None)
    init.extend(check_lines(block.name, shapes.constraints, height))
    init.append("        self.layers = nn.ModuleDict()")
    args = ", ".join(f"x{id_token(i)}" for i in inputs)
    first = f"x{id_token(inputs[0])}"
    fwd = ["", f"    def forward(self, {args}):", f"        B, H, W = {first}.shape[0], {first}.shape[2], {first}.shape[3]",
           "        C, dim = self.C, self.dim"]
    init_tail = ["        self.C, self.dim = C, dim"]
    SourceLowering(block, report, ctx, init, fwd).run()  # the nodes' lines, in the order of the walk
    return "\n".join(init + init_tail + fwd) + "\n"


#: Most inputs one generated expression takes: `a + b + ...` nests one level per term, and Python's
#: compiler refuses an expression nested a few thousand levels deep (RecursionError).
PIECE = 64
#: Operations that may be applied in pieces: f(f(a, b), c) is f(a, b, c) (declared in the registry),
#: so folding them in pieces gives the same values, in the same order of operations, as one call.
FOLDABLE = Group.FOLDABLE


def _pieces(op: Op, names: list[str], target: str) -> list[list[str]]:
    """The inputs of each statement computing a node: all of them at once, or, past PIECE, the first
    PIECE and then the running result followed by the next PIECE - 1 (`x = a + ... ; x = x + ...`)."""
    if len(names) <= PIECE or op not in FOLDABLE:
        return [names]
    pieces = [names[:PIECE]]
    for start in range(PIECE, len(names), PIECE - 1):
        pieces.append([target, *names[start:start + PIECE - 1]])
    return pieces
