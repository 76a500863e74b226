"""The graph builder every ONNX lowering writes into, the weights it reads, and the finished model.

Weights are read by path from a PyTorch `state_dict` (`Weights`): a block's layer of node 3
is `layers.n3.weight`, a network's unit is the plan's name for it (`layer1.0`, `cells.2.preprocess0`).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from nader import __version__
from nader.dsl.ops import Op

DEFAULT_OPSET = 17
MIN_OPSET = 17
MAX_OPSET = 21  # the newest opset these lowerings are written and tested against
PRODUCER = "nadc"

# Graph input names by input terminal, in the order the graph (and BlockModule.forward) takes them.
INPUT_NAMES = {Op.INPUT: "input", Op.INPUT1: "input1", Op.INPUT2: "input2"}
OUTPUT_NAME = "output"

# nn.BatchNorm2d's and nn.LayerNorm's default epsilon: the PyTorch backend and the skeletons build with it.
TORCH_NORM_EPS = 1e-5


class OnnxLoweringError(Exception):
    """The block or module cannot be lowered (the message says why; no traceback for users).
    `diagnostics`: the verifier's, where a `BuildError` was the cause."""

    def __init__(self, message: str, diagnostics: Sequence = ()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


def check_opset(opset: int) -> None:
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxLoweringError(f"opset {opset} is not supported; use {MIN_OPSET} to {MAX_OPSET}")


class Weights:
    """The parameters and buffers of a module by path (its `state_dict`), seen from `prefix`."""

    def __init__(self, state: Mapping[str, object], prefix: str = "", _modules: Optional[set] = None):
        self.state = state
        self.prefix = prefix
        self._modules = _modules if _modules is not None else {key.rpartition(".")[0] for key in state}

    def at(self, path: str) -> "Weights":
        """The weights of the submodule at `path` (relative to this one)."""
        return Weights(self.state, f"{self.prefix}{path}.", self._modules)

    def exists(self) -> bool:
        """Whether this submodule holds any parameter or buffer."""
        return self.prefix.rstrip(".") in self._modules

    def get(self, name: str) -> Optional[np.ndarray]:
        tensor = self.state.get(self.prefix + name)
        return None if tensor is None else tensor.detach().cpu().numpy().astype(np.float32)

    def require(self, name: str) -> np.ndarray:
        array = self.get(name)
        if array is None:
            raise OnnxLoweringError(f"the weights have no `{self.prefix}{name}`")
        return array


class Lowering:
    """Builds one graph: nodes, initializers and unique names."""

    def __init__(self, opset: int, prefix: str = ""):
        self.opset = opset
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.value_info: list[onnx.ValueInfoProto] = []
        self._names: set[str] = set()
        self._consts: dict[tuple, str] = {}

    def name(self, base: str, prefixed: bool = True) -> str:
        base = self.prefix + base if prefixed else base
        candidate, k = base, 1
        while candidate in self._names:
            k += 1
            candidate = f"{base}_{k}"
        self._names.add(candidate)
        return candidate

    def reserve(self, name: str) -> str:
        self._names.add(name)
        return name

    def add(self, op_type: str, inputs: Sequence[str], base: str, outputs: int = 1, **attrs) -> str:
        """Adds a node; returns its (first) output name."""
        outs = [self.name(base if k == 0 else f"{base}_out{k}") for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=self.name(f"{base}/{op_type}"), **attrs))
        return outs[0]

    def add_to(self, op_type: str, inputs: Sequence[str], output: str, **attrs) -> str:
        """Adds a node writing to a given (reserved) output name."""
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=self.name(f"{output}/{op_type}"), **attrs))
        return output

    def weight(self, array: np.ndarray, base: str) -> str:
        name = self.name(base)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, values: Sequence[int], base: str = "const") -> str:
        """An int64 1-D constant (shared between uses)."""
        key = tuple(int(v) for v in values)
        if key not in self._consts:
            name = self.name(f"{base}_" + "_".join(str(v).replace("-", "m") for v in key) if len(key) <= 6 else base,
                             prefixed=False)
            self.initializers.append(numpy_helper.from_array(np.array(key, dtype=np.int64), name))
            self._consts[key] = name
        return self._consts[key]

    def scalar_f32(self, value: float, base: str) -> str:
        key = ("f32", float(value))
        if key not in self._consts:
            name = self.name(base, prefixed=False)
            self.initializers.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
            self._consts[key] = name
        return self._consts[key]

    # -- reductions whose axes moved from attribute to input in opset 18 ------------------
    def reduce(self, op_type: str, x: str, axes: Sequence[int], base: str, keepdims: int = 1) -> str:
        axes_as_input = op_type == "ReduceSum" or self.opset >= 18
        if axes_as_input:
            return self.add(op_type, [x, self.const(axes, "axes")], base, keepdims=keepdims)
        return self.add(op_type, [x], base, axes=list(axes), keepdims=keepdims)

    def unsqueeze(self, x: str, axes: Sequence[int], base: str) -> str:
        return self.add("Unsqueeze", [x, self.const(axes, "axes")], base)


def conv_node(g: Lowering, conv: Weights, x: str, base: str, *, pads: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int], groups: int = 1) -> str:
    """A Conv node with the weight (and bias, if any) of a convolution."""
    weight = conv.require("weight")
    inputs = [x, g.weight(weight, f"{base}.weight")]
    bias = conv.get("bias")
    if bias is not None:
        inputs.append(g.weight(bias, f"{base}.bias"))
    return g.add("Conv", inputs, base, kernel_shape=list(weight.shape[2:]), strides=list(strides),
                 dilations=list(dilations), group=int(groups), pads=list(pads))


def bn_node(g: Lowering, bn: Weights, x: str, base: str) -> str:
    """BatchNormalization in inference mode with a BN's parameters and running statistics."""
    mean, var = bn.get("running_mean"), bn.get("running_var")
    if mean is None or var is None:
        raise OnnxLoweringError(f"{base}: BN without running statistics cannot be exported for inference")
    channels = mean.shape[0]
    weight = bn.get("weight")
    bias = bn.get("bias")
    weight = weight if weight is not None else np.ones(channels, np.float32)
    bias = bias if bias is not None else np.zeros(channels, np.float32)
    inputs = [x, g.weight(weight, f"{base}.weight"), g.weight(bias, f"{base}.bias"),
              g.weight(mean, f"{base}.running_mean"), g.weight(var, f"{base}.running_var")]
    return g.add("BatchNormalization", inputs, base, epsilon=TORCH_NORM_EPS)  # inference mode


def linear_node(g: Lowering, linear: Weights, x: str, base: str) -> str:
    """Gemm of a 2-d input with a linear layer's weight (out, in) and bias."""
    inputs = [x, g.weight(linear.require("weight"), f"{base}.weight")]
    bias = linear.get("bias")
    if bias is not None:
        inputs.append(g.weight(bias, f"{base}.bias"))
    return g.add("Gemm", inputs, base, transB=1)


def graph_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-." else "_" for ch in name) or "block"


def model_proto(graph: onnx.GraphProto, opset: int, metadata: Mapping[str, str]) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=PRODUCER,
                              producer_version=__version__)
    # The IR version of the opset, so older runtimes load the model.
    model.ir_version = min(onnx.IR_VERSION, _IR_FOR_OPSET.get(opset, onnx.IR_VERSION))
    helper.set_model_props(model, dict(metadata))
    return model


_IR_FOR_OPSET = {17: 8, 18: 8, 19: 9, 20: 9, 21: 10}


def check_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """Runs the ONNX checker (full) and strict shape inference; returns the inferred model."""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
