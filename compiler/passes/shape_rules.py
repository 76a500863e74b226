"""The shape rules, one per operation, in a table keyed by `Op` (`SHAPE_RULES`).

A rule gets the context, the node and its input shapes (in edge order) and returns the output
shape, or raises `ShapeError` (a diagnostic) or `_Warning` (a warning with a shape).
"""
from __future__ import annotations

from typing import Callable, Optional

from nader.dsl.expr import TupleValue, constant_int
from nader.dsl.ir import Node
from nader.dsl.ops import Op

from .shape_codes import (AXIS_OUT_OF_RANGE, BAD_PERMUTE, BAD_REPEAT, BROADCAST_MISMATCH, CONCAT_MISMATCH, CONTRACT,
                          MATMUL_MISMATCH, MATMUL_SWAPPED, NON_POSITIVE, RANK_MISMATCH, RESHAPE_COUNT)
from .size_checks import int_pair
from .symbolic import ONE, Poly, ceil_div, exact_quotient, product
from .shape_context import ShapeContext, _operand_labels, _spatial
from .shape_types import Shape, ShapeError, _Warning, shape_str


# -- shape rules, one per operation ------------------------------------------------------

def _rule_conv(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, "Conv2d")
    in_channels = x[1]
    ctx.layer_axis(in_channels, "`Conv2d` input channels (axis 1)")
    out = ctx.size(node.params["out_channels"], "`out_channels`")
    groups = ctx.size(node.params["groups"], "`groups`")
    ctx.require_positive(out, "`out_channels`")
    ctx.require_positive(groups, "`groups`")
    ctx.require_divides(groups, in_channels, "`groups` must divide the input channels")
    ctx.require_divides(groups, out, "`groups` must divide `out_channels`")
    ctx.result.facts.setdefault(node.id, {})["groups"] = groups
    sh, sw = int_pair(node.params["stride"])
    return (x[0], out, ceil_div(x[2], sh), ceil_div(x[3], sw))


def _rule_pool(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, node.op_name)
    sh, sw = int_pair(node.params["stride"])
    return (x[0], x[1], ceil_div(x[2], sh), ceil_div(x[3], sw))


def _rule_adaptive_pool(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, node.op_name)
    oh, ow = int_pair(node.params["output_size"])
    return (x[0], x[1], Poly.const(oh), Poly.const(ow))


def _rule_linear(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    if not x:
        raise ShapeError(RANK_MISMATCH, "`Linear` needs at least a 1-d input")
    ctx.layer_axis(x[-1], "`Linear` input features (last axis)")
    out = ctx.size(node.params["out_channels"], "`out_channels`")
    ctx.require_positive(out, "`out_channels`")
    return x[:-1] + (out,)


def _rule_same(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    return xs[0]


def _rule_bn(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    _spatial(ctx, x, "BN")
    ctx.layer_axis(x[1], "`BN` features (axis 1)")
    return x


def _rule_ln(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    if not x:
        raise ShapeError(RANK_MISMATCH, "`LN` needs at least a 1-d input")
    ctx.layer_axis(x[-1], "`LN` normalised axis (last axis)")
    return x


def _broadcast(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    result = xs[0]
    for index, x in enumerate(xs[1:], 1):
        rank = max(len(result), len(x))
        a = (ONE,) * (rank - len(result)) + tuple(result)
        b = (ONE,) * (rank - len(x)) + tuple(x)
        out = []
        for axis, (p, q) in enumerate(zip(a, b)):
            if q == ONE or ctx.same(p, q):
                out.append(p)
            elif p == ONE:
                out.append(q)
            else:
                sources = ctx.block.inputs_of(node.id)
                raise ShapeError(
                    BROADCAST_MISMATCH,
                    f"`{node.op_name}` inputs do not broadcast: {shape_str(result)} from node {sources[0]} and "
                    f"{shape_str(x)} from node {sources[index]} differ on axis {axis - rank + len(x) if len(x) == rank else axis} "
                    f"({p} vs {q})",
                    "make both inputs the same shape (e.g. a 1x1 Conv2d to match channels, the same stride to match H, W)",
                    labels=_operand_labels(ctx, [(sources[0], xs[0]), (sources[index], x)]))
        result = tuple(out)
    return result


def _rule_concat(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    rank = len(xs[0])
    axis = ctx.axis(constant_int(node.params["dim"]), rank, "`dim`")  # type: ignore[arg-type]
    sources = ctx.block.inputs_of(node.id)
    total = xs[0][axis]
    for index, x in enumerate(xs[1:], 1):
        if len(x) != rank:
            raise ShapeError(CONCAT_MISMATCH, f"`concat` inputs have different ranks: {shape_str(xs[0])} from node "
                                              f"{sources[0]} and {shape_str(x)} from node {sources[index]}")
        for k in range(rank):
            if k != axis and not ctx.same(x[k], xs[0][k]):
                raise ShapeError(CONCAT_MISMATCH,
                                 f"`concat` along axis {axis}: {shape_str(xs[0])} from node {sources[0]} and "
                                 f"{shape_str(x)} from node {sources[index]} differ on axis {k} ({xs[0][k]} vs {x[k]})",
                                 "make the other axes equal, or concatenate along the axis that differs",
                                 labels=_operand_labels(ctx, [(sources[0], xs[0]), (sources[index], x)]))
        total = total + x[axis]
    return tuple(total if k == axis else xs[0][k] for k in range(rank))


def _matmul_shape(a: Shape, b: Shape) -> Optional[Shape]:
    if not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return () if a[0] == b[0] else None
    squeeze_front = len(a) == 1
    squeeze_back = len(b) == 1
    a2 = (ONE,) + tuple(a) if squeeze_front else tuple(a)
    b2 = tuple(b) + (ONE,) if squeeze_back else tuple(b)
    if a2[-1] != b2[-2]:
        return None
    batch_a, batch_b = a2[:-2], b2[:-2]
    rank = max(len(batch_a), len(batch_b))
    pa = (ONE,) * (rank - len(batch_a)) + batch_a
    pb = (ONE,) * (rank - len(batch_b)) + batch_b
    batch = []
    for p, q in zip(pa, pb):
        if p == q or q == ONE:
            batch.append(p)
        elif p == ONE:
            batch.append(q)
        else:
            return None
    out = tuple(batch) + (a2[-2], b2[-1])
    if squeeze_front:
        out = out[:-2] + out[-1:]
    if squeeze_back:
        out = out[:-1]
    return out


def _rule_matmul(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    a, b = xs
    out = _matmul_shape(a, b)
    if out is not None:
        return out
    swapped = _matmul_shape(b, a)
    sources = ctx.block.inputs_of(node.id)
    if swapped is not None:
        ctx.result.facts.setdefault(node.id, {})["swapped"] = True
        raise _Warning(MATMUL_SWAPPED, f"`multiply` fits only as node {sources[1]} x node {sources[0]} "
                                       f"({shape_str(b)} x {shape_str(a)}), the reverse of the edge order",
                       "swap the order of the two edges into this node", swapped)
    raise ShapeError(MATMUL_MISMATCH, f"`multiply` of {shape_str(a)} (node {sources[0]}) and {shape_str(b)} "
                                      f"(node {sources[1]}) does not fit (..., n, k) x (..., k, m)",
                     "`permute` or `reshape` one operand so its inner size matches the other's",
                     labels=_operand_labels(ctx, [(sources[0], a), (sources[1], b)]))


def _axes(ctx: ShapeContext, node: Node, rank: int) -> list[int]:
    value = node.params["dim"]
    items = value.items if isinstance(value, TupleValue) else (value,)
    axes = [ctx.axis(constant_int(i), rank, "`dim`") for i in items]  # type: ignore[arg-type]
    if len(set(axes)) != len(axes):
        raise ShapeError(AXIS_OUT_OF_RANGE, f"`dim` names an axis twice: {value}", "list each axis once", ctx._span("dim"))
    return axes


def _rule_reduce(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    if not x:
        raise ShapeError(RANK_MISMATCH, f"`{node.op_name}` needs at least a 1-d input")
    axes = _axes(ctx, node, len(x))
    return tuple(ONE if k in axes else s for k, s in enumerate(x))


def _rule_softmax(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    ctx.axis(constant_int(node.params["dim"]), max(len(x), 1), "`dim`")  # type: ignore[arg-type]
    return x


def _items(value) -> tuple:
    """The values of a variadic parameter: `permute(0,2,3,1)` binds a tuple, `permute(dims=1)` one value (the
    structure pass checks each item the same way)."""
    return value.items if isinstance(value, TupleValue) else (value,)


def _rule_permute(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    dims = [constant_int(v) for v in _items(node.params["dims"])]
    rank = len(x)
    if len(dims) != rank or any(d is None or not -rank <= d < rank for d in dims) or \
            len({d % rank for d in dims}) != rank:  # type: ignore[operator]
        raise ShapeError(BAD_PERMUTE, f"`permute({','.join(map(str, dims))})` is not a permutation of the "
                                      f"{rank} axes of {shape_str(x)}",
                         f"name each of the axes 0..{rank - 1} once" + (", e.g. `permute(0,2,3,1)`" if rank == 4 else ""),
                         ctx._span("dims") if False else None)
    return tuple(x[d % rank] for d in dims)  # type: ignore[operator]


def _rule_repeat(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    sizes = [ctx.size(v, "`repeat` size") for v in _items(node.params["sizes"])]
    if len(sizes) < len(x):
        raise ShapeError(BAD_REPEAT, f"`repeat` gives {len(sizes)} sizes for the {len(x)} axes of {shape_str(x)}",
                         "give one repeat count per axis (1 keeps an axis)")
    for s in sizes:
        value = s.constant()
        if value is not None and value < 1:
            raise ShapeError(BAD_REPEAT, f"`repeat` size {s} is below 1", "use counts of at least 1")
        ctx.require_positive(s, "`repeat` size")
    padded = (ONE,) * (len(sizes) - len(x)) + tuple(x)
    return tuple(p * s for p, s in zip(padded, sizes))


def _rule_reshape(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    entries = [ctx.size(v, "`reshape` size") for v in _items(node.params["shape"])]
    total = product(x)
    minus = [k for k, e in enumerate(entries) if e.constant() == -1]
    if len(minus) > 1:
        raise ShapeError(RESHAPE_COUNT, "`reshape` has more than one -1", "keep at most one -1")
    for e in entries:
        c = e.constant()
        if c is not None and c != -1 and c < 1:
            raise ShapeError(NON_POSITIVE, f"`reshape` size {e} must be at least 1 (or -1)")
        if c is None:
            ctx.require_positive(e, "`reshape` size")
    known = product(e for e in entries if e.constant() != -1)
    target = f"reshape({','.join(str(e) for e in entries)})"
    if minus:
        inferred = exact_quotient(total, known)
        if inferred is None:
            raise ShapeError(RESHAPE_COUNT, f"`{target}` cannot infer -1: {total} elements of {shape_str(x)} are not "
                                            f"a multiple of {known} for all sizes",
                             "give the sizes so that the input's element count divides evenly")
        ctx.require_integer(inferred, "the -1 of `reshape`")
        ctx.require_positive(inferred, "the -1 of `reshape`")
        entries[minus[0]] = inferred
        return tuple(entries)
    if not ctx.same(known, total):
        raise ShapeError(RESHAPE_COUNT, f"`{target}` holds {known} elements but its input {shape_str(x)} holds {total}",
                         "make the product of the sizes equal the input's, or use -1 for one of them")
    return tuple(entries)


def _rule_output(ctx: ShapeContext, node: Node, xs: list[Shape]) -> Shape:
    (x,) = xs
    expected = ctx.result.contract.output
    if len(x) != len(expected) or not all(ctx.same(a, b) for a, b in zip(x, expected)):
        role = ctx.result.role
        raise ShapeError(CONTRACT, f"a {role} block must output {shape_str(expected)}, but node "
                                   f"{ctx.block.inputs_of(node.id)[0]} gives {shape_str(x)}",
                         _contract_help(x, expected))
    return x


def _contract_help(got: Shape, expected: Shape) -> str:
    if len(got) != len(expected):
        return "`permute`/`reshape` back to (B,C,H,W) before output"
    if got[1] != expected[1]:
        return f"make the last layer's out_channels give {expected[1]} channels"
    return "adjust the strides: the output's spatial size must be " + ",".join(str(s) for s in expected[2:])


SHAPE_RULES: dict[Op, Callable[[ShapeContext, Node, tuple[Shape, ...]], Shape]] = {
    Op.CONV2D: _rule_conv,
    Op.LINEAR: _rule_linear,
    Op.AVG_POOL2D: _rule_pool,
    Op.MAX_POOL2D: _rule_pool,
    Op.ADAPTIVE_AVG_POOL2D: _rule_adaptive_pool,
    Op.ADAPTIVE_MAX_POOL2D: _rule_adaptive_pool,
    Op.RELU: _rule_same,
    Op.GELU: _rule_same,
    Op.SIGMOID: _rule_same,
    Op.DROP_PATH: _rule_same,
    Op.ZERO: _rule_same,
    Op.BN: _rule_bn,
    Op.LN: _rule_ln,
    Op.ADD: _broadcast,
    Op.MUL: _broadcast,
    Op.MATMUL: _rule_matmul,
    Op.CONCAT: _rule_concat,
    Op.MEAN: _rule_reduce,
    Op.MAX: _rule_reduce,
    Op.SUM: _rule_reduce,
    Op.SOFTMAX: _rule_softmax,
    Op.PERMUTE: _rule_permute,
    Op.REPEAT: _rule_repeat,
    Op.RESHAPE: _rule_reshape,
    Op.OUTPUT: _rule_output,
}

# Operations whose output is their input, with nothing to check: the interpreter copies the shape.
PASS_THROUGH = frozenset(op for op, rule in SHAPE_RULES.items() if rule is _rule_same)
