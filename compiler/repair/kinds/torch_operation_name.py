"""Name an operation the way the registry does where a model wrote PyTorch's name (NAD104)."""
from __future__ import annotations

from nader.dsl.diagnostics import SAFE
from nader.dsl.ops import REGISTRY

from ..kind import FixKind

KIND = FixKind("torch-operation-name", SAFE, ("NAD104",),
               "Replace PyTorch's name of an operation (`BatchNorm2d`, `LayerNorm`, `cat`) by the registry's.", """
    Models trained on PyTorch code write `BatchNorm2d(C)`, `LayerNorm`, `nn.ReLU`, `cat`. The
    operation they mean is the registry's `BN`, `LN`, `ReLU`, `concat`; arguments go where the
    registry's operation takes none (`BatchNorm2d(C)` becomes `BN`). Safe: the same operation.
""", order=2)

#: PyTorch's (and other common) names, lower-cased, of registry operations.
TORCH_NAMES = {
    "batchnorm2d": "BN", "batchnorm": "BN", "batchnorm1d": "BN", "bn2d": "BN", "batch_norm": "BN",
    "layernorm": "LN", "layernorm2d": "LN", "layer_norm": "LN",
    "cat": "concat", "concatenate": "concat",
    "avgpool": "AvgPool2d", "maxpool": "MaxPool2d", "adaptiveavgpool": "AdaptiveAvgPool2d",
    "adaptivemaxpool": "AdaptiveMaxPool2d", "globalavgpool": "AdaptiveAvgPool2d",
    "conv": "Conv2d", "conv2d": "Conv2d", "linear": "Linear", "dense": "Linear",
    "add": "Add", "mul": "Mul", "matmul": "multiply", "bmm": "multiply",
    "droppath": "DropPath", "drop_path": "DropPath", "stochasticdepth": "DropPath",
}


def _registry_name(written: str):
    key = written.rsplit(".", 1)[-1].lower()  # `nn.BatchNorm2d`
    by_case = {d.name.lower(): d for d in REGISTRY.values()}
    if key in TORCH_NAMES:
        return next(d for d in REGISTRY.values() if d.name == TORCH_NAMES[key])
    return by_case.get(key)


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is not None:
        return
    target = _registry_name(node.op_name)
    if target is None:
        return
    args = ",".join(str(a) for a in node.args) if target.params else ""
    edit = ctx.editor()
    edit.set_node(node, f"{target.name}({args})" if args else target.name)
    yield edit.fix(KIND.name, f"write `{target.name}` for `{node.op_name}` in node {node.id}", SAFE)
