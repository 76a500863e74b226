"""Lowering a whole network from its `Plan`, with the weights of the built module read by path.

The plan says what the network is made of and how data flows (`compiler/plan.py`); a unit's
name is its module path, so its weights are the `state_dict` keys under that name. Block units
are lowered by `block.py`; the skeleton's own layers by `LAYER_LOWERINGS`, one per plan layer
kind, which read the parameters of the PyTorch skeleton modules (`backends/torch_support.py`).
Node and initializer names are `unit/...` and `unit.layer.weight`, as in the module.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import numpy as np
import onnx
from onnx import TensorProto, helper

from nader.compiler.architecture import Architecture
from nader.compiler.backends.onnx.block import lower_block
from nader.compiler.backends.onnx.graph import (DEFAULT_OPSET, OUTPUT_NAME, Lowering, OnnxLoweringError, Weights,
                                                bn_node, check_opset, conv_node, graph_name, linear_node, model_proto)
from nader.compiler.plan import BlockUnit, LayerUnit, Plan, width_int


def _lower_block_unit(g: Lowering, arch: Architecture, unit: BlockUnit, weights: Weights, xs: list[str]) -> str:
    report = arch.report_at(unit.part, unit.size[0])  # the report the unit was built from
    if report.shapes is None or not report.ok:
        raise OnnxLoweringError(f"{unit.name}: the block does not verify")
    ops = list(report.shapes.contract.inputs)
    if len(ops) != len(xs):
        raise OnnxLoweringError(f"{unit.name}: block `{report.block.name}` takes {len(ops)} inputs, got {len(xs)}")
    widths = {"C": width_int(unit.C), "dim": width_int(unit.dim)}
    saved, g.prefix = g.prefix, f"{unit.name}/"
    try:
        return lower_block(g, report.block, report.shapes, weights.at(f"{unit.name}.layers"), widths,
                           dict(zip(ops, xs)))
    finally:
        g.prefix = saved


def _relu_conv_bn(g: Lowering, unit: LayerUnit, weights: Weights, x: str) -> str:
    """DARTS' preprocessing, `Sequential(ReLU, Conv2d 1x1, BN)`."""
    path = unit.name
    x = g.add("Relu", [x], f"{path}.0/relu")
    x = conv_node(g, weights.at(f"{path}.1"), x, f"{path}.1", pads=[0, 0, 0, 0], strides=[1, 1], dilations=[1, 1])
    return bn_node(g, weights.at(f"{path}.2"), x, f"{path}.2")


def _factorized_reduce(g: Lowering, unit: LayerUnit, weights: Weights, x: str) -> str:
    """DARTS' FactorizedReduce, exact for every H, W (odd ones too).

    PyTorch: `relu`; `conv_1` (1x1, stride 2) of x; `conv_2` of `x[:, :, 1:, 1:]` padded at the end by
    `H % 2`, `W % 2`; concat; BN. A 1x1 stride-2 convolution of `x[1:]` with one row of end padding reads
    rows 1, 3, ... of x and, for odd H, a zero row last: the same as the dynamic padding, with static pads.
    """
    path = unit.name
    x = g.add("Relu", [x], f"{path}/relu")
    a = conv_node(g, weights.at(f"{path}.conv_1"), x, f"{path}.conv_1", pads=[0, 0, 0, 0], strides=[2, 2],
                  dilations=[1, 1])
    big = np.iinfo(np.int64).max
    shifted = g.add("Slice", [x, g.const([1, 1], "starts"), g.const([big, big], "ends"), g.const([2, 3], "axes")],
                    f"{path}/shifted")
    b = conv_node(g, weights.at(f"{path}.conv_2"), shifted, f"{path}.conv_2", pads=[0, 0, 1, 1], strides=[2, 2],
                  dilations=[1, 1])
    y = g.add("Concat", [a, b], f"{path}/concat", axis=1)
    return bn_node(g, weights.at(f"{path}.bn"), y, f"{path}.bn")


def _bn_relu(g: Lowering, unit: LayerUnit, weights: Weights, x: str) -> str:
    """NAS-Bench-201's BN-ReLU before pooling, `Sequential(BN, ReLU)`."""
    x = bn_node(g, weights.at(f"{unit.name}.0"), x, f"{unit.name}.0")
    return g.add("Relu", [x], f"{unit.name}.1/relu")


def _avg_pool(g: Lowering, unit: LayerUnit, weights: Weights, x: str) -> str:
    """Global average pooling, flattened for the classifier."""
    pooled = g.add("GlobalAveragePool", [x], unit.name)
    return g.add("Flatten", [pooled], "flatten", axis=1)


def _linear(g: Lowering, unit: LayerUnit, weights: Weights, x: str) -> str:
    return linear_node(g, weights.at(unit.name), x, unit.name)


# One lowering per plan layer kind (`plan.LAYER_KINDS`; a test checks they match).
LAYER_LOWERINGS: dict[str, Callable[[Lowering, LayerUnit, Weights, str], str]] = {
    "relu_conv_bn": _relu_conv_bn,
    "factorized_reduce": _factorized_reduce,
    "bn_relu": _bn_relu,
    "avg_pool": _avg_pool,
    "linear": _linear,
}


def _lower_layer(g: Lowering, unit: Optional[LayerUnit], weights: Weights, x: str) -> str:
    if unit is None:  # an identity (a DARTS input already at the cell's width)
        return x
    lowering = LAYER_LOWERINGS.get(unit.kind)
    if lowering is None:
        raise OnnxLoweringError(f"no ONNX lowering for the skeleton layer `{unit.name}` ({unit.kind})")
    return lowering(g, unit, weights, x)


def lower_plan(g: Lowering, arch: Architecture, plan: Plan, weights: Weights, x: str) -> str:
    """Lowers the network of `plan` into `g`, from input tensor `x`; returns the logits tensor."""
    h = _lower_block_unit(g, arch, plan.stem, weights, [x])
    if plan.skeleton.cells:
        s0 = s1 = h
        for c in plan.cells:  # each cell reads the outputs of the two before it
            a = _lower_layer(g, c.preprocess0, weights, s0)
            b = _lower_layer(g, c.preprocess1, weights, s1)
            s0, s1 = s1, _lower_block_unit(g, arch, c.cell, weights, [a, b])
        h = s1
    else:
        for i, stage in enumerate(plan.stages):
            for unit in stage:
                h = _lower_block_unit(g, arch, unit, weights, [h])
            if i < len(plan.downsamples):
                h = _lower_block_unit(g, arch, plan.downsamples[i], weights, [h])
    h = _lower_layer(g, plan.lastact, weights, h)
    h = _lower_layer(g, plan.pool, weights, h)
    return _lower_layer(g, plan.fc, weights, h)


def network_to_onnx(arch: Architecture, plan: Plan, state: Mapping[str, object], *, opset: int = DEFAULT_OPSET,
                    input_size: Optional[int] = None, info: Optional[Mapping] = None,
                    name: str = "network") -> onnx.ModelProto:
    """The ONNX model of the network of `plan` (concrete widths) with weights `state` (eval-mode semantics).

    `state` is the `state_dict` of the module `network.assemble(arch, plan)` built. Input `input` is
    `(B,3,H,W)` with B, H, W symbolic unless `input_size` fixes H = W; output `output` is `(B,num_classes)`.
    """
    check_opset(opset)
    g = Lowering(opset)
    x = g.reserve("input")
    result = lower_plan(g, arch, plan, Weights(state), x)
    g.reserve(OUTPUT_NAME)
    g.add_to("Identity", [result], OUTPUT_NAME)
    size = [input_size, input_size] if input_size else ["H", "W"]
    graph_input = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["B", 3, *size])
    graph_output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["B", plan.num_classes])
    graph = helper.make_graph(g.nodes, graph_name(name), [graph_input], [graph_output], g.initializers,
                              doc_string="NADER network")
    metadata = {"nader.network": name}
    for key, value in (info or {}).items():
        if isinstance(value, (str, int, float)) or (isinstance(value, (list, tuple)) and
                                                    all(isinstance(v, (int, float, str)) for v in value)):
            metadata[f"nader.{key}"] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return model_proto(graph, opset, metadata)
