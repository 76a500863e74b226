"""Write the input's size where a `reshape` has a size 0 (ONNX's "keep this axis") (NAD314)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import Op

from ..kind import FixKind

KIND = FixKind("reshape-keep-axis", UNSAFE, ("NAD314",),
               "Replace a size 0 in `reshape` by the input's size on that axis (ONNX's meaning of 0), or by -1.", """
    ONNX's `Reshape` (and Paddle's, Caffe's) reads 0 as "keep this axis", and models write
    `reshape(0,C,-1)` or `reshape(B,0,-1)`. PyTorch has no such size: each 0 becomes the input's
    size on that axis (`reshape(B,C,-1)`); where that cannot be written, a lone 0 becomes `-1`.
""", order=10)


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None or node.op is not Op.RESHAPE:
        return
    written = [str(a.value) for a in node.args if a.name is None]
    zeros = [k for k, size in enumerate(written) if size == "0"]
    if not zeros:
        return
    inputs = ctx.inputs(node.id)
    shape = ctx.shape(inputs[0]) if len(inputs) == 1 else None
    if shape is not None and zeros[-1] < len(shape):
        kept = [str(shape[k]) if k in zeros else size for k, size in enumerate(written)]
        if all(_writable(size) for size in kept):
            edit = ctx.editor()
            edit.set_node(node, f"reshape({','.join(kept)})")
            yield edit.fix(KIND.name, f"keep the input's size where node {node.id} wrote 0: `reshape({','.join(kept)})`",
                           UNSAFE)
    if len(zeros) == 1 and "-1" not in written:
        sizes = ["-1" if k == zeros[0] else size for k, size in enumerate(written)]
        edit = ctx.editor()
        edit.set_node(node, f"reshape({','.join(sizes)})")
        yield edit.fix(KIND.name, f"let node {node.id} infer the size it wrote as 0: `reshape({','.join(sizes)})`",
                       UNSAFE)


def _writable(size: str) -> bool:
    """Whether a size from shape inference is also an expression of the language (not `ceil(H/2)`)."""
    return "ceil" not in size and "floor" not in size and "max" not in size
