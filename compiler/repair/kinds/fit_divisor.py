"""Make a layer's sizes whole at the widths NAS-Bench-201's network uses (NAD318)."""
from __future__ import annotations

import re
from fractions import Fraction

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.expr import evaluate_expr
from nader.dsl.ops import ParamKind

from ...passes.size_checks import network_sizes
from ..kind import FixKind
from ._common import with_arg

KIND = FixKind("fit-divisor", UNSAFE, ("NAD318",),
               "Divide by what 16 is a multiple of, or fit `groups`, where a size is not whole at NAS-Bench-201's widths.", """
    `Linear(out_channels=C/32)` is half a channel at `C` = 16, the width NAS-Bench-201's first
    stage (and NADER's network) gives a base block: the divisor becomes the largest that keeps
    the size whole there (`C/16`). `groups` that does not divide the channels there becomes the
    input's channel count (depthwise) or goes (one group). No node is added.
""", order=10)

_DIVISOR = re.compile(r"(//?)(\d+)")


def candidates(ctx, diagnostic):
    sizes = network_sizes(ctx.report.role, ctx.report.domain)
    if not sizes or ctx.report.shapes is None:
        return
    live = set(ctx.report.shapes.order)
    for node in ctx.block.nodes:
        if node.id not in live or node.opdef is None:
            continue
        for param in node.opdef.params:
            arg = node.arg(param.name)
            if param.kind is not ParamKind.SIZE or arg is None or not arg.name:
                continue
            if param.name == "groups":
                if _groups_fit(ctx, node, sizes):
                    continue
                width = next((ctx.channels(s) for s in ctx.inputs(node.id) if ctx.channels(s)), None)
                for value in dict.fromkeys(v for v in (width, None) if v != str(arg.value)):
                    edit = ctx.editor()
                    edit.set_node(node, with_arg(node, "groups", value))
                    yield edit.fix(KIND.name, f"set `groups={value}` on node {node.id}" if value else
                                   f"remove `groups={arg.value}` from node {node.id} (one group)", UNSAFE)
                continue
            if _whole(arg.value, sizes):
                continue
            text = str(arg.value)
            for match in _DIVISOR.finditer(text):
                divisor = int(match.group(2))
                for smaller in (16, 8, 4, 2):
                    if smaller >= divisor:
                        continue
                    new = text[:match.start(2)] + str(smaller) + text[match.end(2):]
                    edit = ctx.editor()
                    edit.set_node(node, with_arg(node, param.name, new))
                    yield edit.fix(KIND.name, f"set `{param.name}` of node {node.id} to `{new}` (was `{text}`), whole "
                                              f"at NAS-Bench-201's widths", UNSAFE)
                    break


def _whole(value, sizes) -> bool:
    """Whether a size expression is a positive whole number at every one of `sizes`."""
    try:
        values = [evaluate_expr(value, s) for s in sizes]
    except (ArithmeticError, KeyError, TypeError, ValueError):
        return True  # not this kind's to judge
    return all(isinstance(v, Fraction) and v.denominator == 1 and v >= 1 for v in values)


def _groups_fit(ctx, node, sizes) -> bool:
    """Whether `groups` divides the node's input and output channels at every one of `sizes`."""
    inputs = ctx.inputs(node.id)
    shape = ctx.shape(inputs[0]) if len(inputs) == 1 else None
    out = node.arg("out_channels")
    if shape is None or len(shape) != 4 or out is None:
        return True
    try:
        for s in sizes:
            groups = evaluate_expr(node.arg("groups").value, s)
            channels = (Fraction(shape[1].evaluate(s)), evaluate_expr(out.value, s))
            if groups < 1 or any(c % groups for c in channels):
                return False
    except (ArithmeticError, KeyError, TypeError, ValueError, AttributeError):
        return True
    return True
