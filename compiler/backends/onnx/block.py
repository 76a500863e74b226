"""Lowering one block: its live nodes in order, each by its operation's lowering (`ops.py`).

The exported models are correct for every input size: the batch `B` and the spatial sizes
`H`, `W` are symbolic dimensions of the graph inputs. Weights come from a `BlockModule` built
by the PyTorch backend, read by path from its `state_dict`, so both backends compute the same
function with the same parameters (the tests compare them with onnxruntime). See docs/backends.md.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence, Union

import onnx
from onnx import TensorProto, helper

from nader.compiler.backends.onnx.context import BlockContext
from nader.compiler.backends.onnx.graph import (DEFAULT_OPSET, INPUT_NAMES, OUTPUT_NAME, Lowering, OnnxLoweringError,
                                                Weights, check_opset, graph_name, model_proto)
from nader.compiler.backends.onnx.ops import LOWERINGS
from nader.compiler.passes.interpreter import Interpreter
from nader.compiler.passes.shapes import ShapeResult, shape_str
from nader.compiler.passes.symbolic import Poly
from nader.compiler.passes.verify import verify_block
from nader.dsl.ir import Block, Node, Role, id_token
from nader.dsl.ops import Group, Op


def _dim(size: Poly, known: Mapping[str, int]) -> Union[int, str, None]:
    """A dimension for ONNX type annotations: an int, a symbolic name in B/H/W, or None (unknown)."""
    free = size.free_symbols()
    if free <= set(known):
        value = size.evaluate(known)
        return int(value) if value.denominator == 1 else None
    if free <= {"B", "H", "W"}:
        return str(size)
    return None  # mixes widths and spatial sizes: left for tools to infer


def _tensor_type(shape: Sequence[Poly], known: Mapping[str, int], name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [_dim(s, known) for s in shape])


def _module_report(module, block: Block, role: Optional[Role], stem_stride: int):
    report = getattr(module, "report", None)
    if report is None or getattr(report, "shapes", None) is None:
        report = verify_block(block, role=role, stem_stride=stem_stride)
    if not report.ok or report.shapes is None:
        raise OnnxLoweringError(f"block `{block.name}` does not verify; run `nadc verify` for the diagnostics")
    return report


def _widths(module, report, in_channels: Optional[int], out_channels: Optional[int]) -> dict[str, int]:
    """Concrete C and dim of a built module."""
    built = (getattr(module, "in_channels", None), getattr(module, "out_channels", None))
    for given, have, what in ((in_channels, built[0], "C"), (out_channels, built[1], "dim")):
        if given is not None and have is not None and given != have:
            raise OnnxLoweringError(f"the module was built at {what}={have}, not {given}")
    c = in_channels if in_channels is not None else built[0]
    d = out_channels if out_channels is not None else built[1]
    if c is None:
        raise OnnxLoweringError("the module's input width is unknown; pass in_channels=")
    if report.role is Role.STEM:
        c = 3 if in_channels is None and getattr(module, "in_channels", None) is None else c
    if d is None:
        d = int(report.shapes.contract.env["dim"].evaluate({"C": c}))
    return {"C": int(c), "dim": int(d)}


def lower_block(g: Lowering, block: Block, shapes: ShapeResult, weights: Weights,
                widths: Mapping[str, int], inputs: Mapping[Op, str]) -> str:
    """Lowers one block's nodes into `g`; `inputs` maps input terminals to tensors. Returns the output tensor.

    `weights` holds the block's layers by node (`n3.weight`, ...), as a BlockModule's `layers` does.
    """
    ctx = BlockContext(block, shapes, weights, dict(widths), dict(inputs), g)
    return OnnxLowering(block, shapes, ctx).run()


class OnnxLowering(Interpreter):
    """The ONNX walk of a block's live nodes, each by its lowering in `LOWERINGS` (`ops.py`).

    A node's value is the name of its output tensor; the walk gives the block's output tensor."""

    __slots__ = ("ctx", "output_name")

    HANDLERS = LOWERINGS
    HANDLER_NAME = "ONNX lowering"

    def __init__(self, block: Block, shapes: ShapeResult, ctx: BlockContext):
        # The live nodes (dead ones are dropped); the input terminals' tensors are given.
        super().__init__(block, shapes.order, terminals={op: t for op, t in ctx.inputs.items() if op in INPUT_NAMES})
        self.ctx = ctx
        self.output_name: Optional[str] = None

    def input(self, node: Node) -> str:
        raise OnnxLoweringError(f"block `{self.block.name}`: no tensor for its `{node.op}` terminal")

    def output(self, node: Node, inputs: tuple) -> str:
        self.output_name = inputs[0]
        return inputs[0]

    def apply(self, lower, node: Node, inputs: tuple) -> str:
        return lower(self.ctx, node, list(inputs), f"n{id_token(node.id)}_{str(node.op).lower()}")

    def missing(self, node: Node) -> str:
        raise OnnxLoweringError(f"no ONNX lowering for `{node.op_name}` (node {node.id})")

    def finish(self) -> str:
        if self.output_name is None:
            raise OnnxLoweringError(f"block `{self.block.name}` has no output")
        return self.output_name


def block_to_onnx(block: Block, module, *, role: Optional[Role] = None, stem_stride: int = 1,
                  in_channels: Optional[int] = None, out_channels: Optional[int] = None,
                  opset: int = DEFAULT_OPSET, input_size: Optional[int] = None,
                  annotate_shapes: bool = True) -> onnx.ModelProto:
    """The ONNX model of `block` with the weights of `module` (a BlockModule of the PyTorch backend).

    Inputs are `input` (or `input1`, `input2` for cells) of shape `(B,C,H,W)` and the output is
    `output`; `B`, `H` and `W` are symbolic unless `input_size` fixes `H = W = input_size`. In the
    square domain both spatial dimensions are `H`; a module built for one resolution (resolution-
    bound layers, or verified at a fixed size) fixes the input to it.
    Intermediate tensors carry their symbolic shapes where they are expressible in `B`, `H`, `W`.
    """
    check_opset(opset)
    report = _module_report(module, block, role, stem_stride)
    shapes = report.shapes
    built_for = getattr(module, "input_size", None) if (shapes.resolution_bound or report.domain.size) else None
    if built_for is not None:
        if input_size is not None and input_size != built_for:
            raise OnnxLoweringError(f"block `{block.name}` was built for {built_for}x{built_for} inputs, not {input_size}")
        input_size = built_for
    widths = _widths(module, report, in_channels, out_channels)
    width_constraints = [c for c in shapes.constraints if c.size.free_symbols() <= {"C", "dim"}]
    if not all(c.holds(widths) for c in width_constraints):
        raise OnnxLoweringError(f"block `{block.name}` needs {', '.join(report.constraints)}; "
                                f"C={widths['C']}, dim={widths['dim']} do not satisfy it")
    if getattr(module, "layers", None) is None:
        raise OnnxLoweringError("the module has no `layers` (expected a BlockModule of the PyTorch backend)")
    weights = Weights(module.state_dict()).at("layers")
    known = dict(widths)
    if input_size is not None:
        known.update(H=input_size, W=input_size)
    g = Lowering(opset)
    inputs: dict[Op, str] = {}
    graph_inputs = []
    for op in (Op.INPUT, Op.INPUT1, Op.INPUT2):
        if op in shapes.contract.inputs:
            inputs[op] = g.reserve(INPUT_NAMES[op])
            graph_inputs.append(_tensor_type(shapes.contract.inputs[op], known, INPUT_NAMES[op]))
    result = lower_block(g, block, shapes, weights, widths, inputs)
    g.reserve(OUTPUT_NAME)
    g.add_to("Identity", [result], OUTPUT_NAME)
    out_type = _tensor_type(shapes.contract.output, known, OUTPUT_NAME)
    value_info = []
    if annotate_shapes:
        value_info = _annotations(block, shapes, known, g)
    graph = helper.make_graph(g.nodes, graph_name(block.name), graph_inputs, [out_type], g.initializers,
                              doc_string=f"NADER block `{block.name}` ({report.role})", value_info=value_info)
    model = model_proto(graph, opset, {
        "nader.block": block.name, "nader.role": str(report.role), "nader.C": str(widths["C"]),
        "nader.dim": str(widths["dim"]), "nader.constraints": "; ".join(report.constraints),
        "nader.output_shape": shape_str(shapes.contract.output)})
    return model


def _annotations(block: Block, shapes: ShapeResult, known: Mapping[str, int], g: Lowering) -> list:
    """Value infos of the nodes' main output tensors (`n{id}_{op}`), with symbolic dims."""
    nodes = block.node_map()
    produced = {o for n in g.nodes for o in n.output}
    infos = []
    for node_id, shape in shapes.shapes.items():
        node = nodes.get(node_id)
        if node is None or node.op in Group.TERMINAL:
            continue
        name = f"n{id_token(node_id)}_{str(node.op).lower()}"
        if name in produced:
            infos.append(_tensor_type(shape, known, name))
    return infos
