"""The ONNX backend: builds ONNX graphs straight from the IR with `onnx.helper`, never by tracing.

Where things are: `ops.py` lowers each operation, `context.py` holds what a lowering sees
(sizes computed in the graph), `block.py` lowers one block, `network.py` a whole network
from its plan, `graph.py` the graph builder, weights by path and the finished model, and
`export.py` builds the PyTorch module, lowers and checks it (`nadc --emit onnx`).
See docs/backends.md.
"""
from nader.compiler.backends.onnx.block import block_to_onnx, lower_block
from nader.compiler.backends.onnx.export import (BuiltNetwork, build_for_export, emit_onnx, export_block,
                                                 export_network)
from nader.compiler.backends.onnx.graph import (DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, Lowering, OnnxLoweringError,
                                                Weights, check_model)
from nader.compiler.backends.onnx.network import LAYER_LOWERINGS, lower_plan, network_to_onnx
from nader.compiler.backends.onnx.ops import LOWERINGS, ONNX_OPS, same_pads

__all__ = ["BuiltNetwork", "DEFAULT_OPSET", "LAYER_LOWERINGS", "LOWERINGS", "Lowering", "MAX_OPSET", "MIN_OPSET",
           "ONNX_OPS", "OnnxLoweringError", "Weights", "block_to_onnx", "build_for_export", "check_model", "emit_onnx",
           "export_block", "export_network", "lower_block", "lower_plan", "network_to_onnx", "same_pads"]
