"""Give an ill-typed parameter a value of its kind (NAD209)."""
from __future__ import annotations

import re
from fractions import Fraction

from nader.dsl.diagnostics import UNSAFE
from nader.dsl.ops import ParamKind

from ..kind import FixKind
from ._common import with_arg

KIND = FixKind("coerce-parameter", UNSAFE, ("NAD209",),
               "Replace an ill-typed parameter's value by the nearest value of its kind, or its default.", """
    `kernel_size=3.0` becomes `3`, `stride=0` becomes `1`, `prob=5` becomes `0.05` (a percentage),
    `out_channels=C/2.5`-like sizes become `C`; where nothing is near, the argument is removed
    when the parameter has a default.
""", order=10)

_NAME = re.compile(r"^`(\w+)` of `")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    match = _NAME.match(diagnostic.message)
    if node is None or node.opdef is None or match is None:
        return
    name = match.group(1)
    param = next((p for p in node.opdef.params if p.name == name), None)
    arg = node.arg(name)
    if param is None or arg is None:
        return
    text = str(arg.value)
    for value in _values(param.kind, text):
        if value == text:
            continue
        edit = ctx.editor()
        edit.set_node(node, with_arg(node, name, value) if arg.name else _positional(node, arg, value))
        yield edit.fix(KIND.name, f"set `{name}` of node {node.id} to `{value}` (was `{text}`)", UNSAFE)
    if not param.required and arg.name:
        edit = ctx.editor()
        edit.set_node(node, with_arg(node, name, None))
        yield edit.fix(KIND.name, f"remove `{name}={text}` from node {node.id} (its default applies)", UNSAFE)


def _positional(node, arg, value) -> str:
    args = [value if a is arg else str(a) for a in node.args]
    return f"{node.op_name}({','.join(args)})"


def _values(kind: ParamKind, text: str) -> list[str]:
    inner = text.strip("()[]'\" ")
    parts = [p.strip().strip("'\"") for p in inner.split(",")] if inner else []
    numbers = [Fraction(p) for p in parts if _NUMBER.match(p)]
    if kind is ParamKind.SPATIAL:
        out = [str(max(1, round(abs(n)))) for n in numbers[:1]]
        if len(numbers) == 2:
            out.append(f"({max(1, round(abs(numbers[0])))},{max(1, round(abs(numbers[1]))) })")
        return out + ["1"]
    if kind in (ParamKind.AXIS, ParamKind.AXES):
        return [str(round(n)) for n in numbers[:1]]
    if kind is ParamKind.PROBABILITY:
        out = [str(float(n / 100)) for n in numbers[:1] if 1 <= n < 100]
        return out + ["0.1"]
    if kind is ParamKind.FLAG:
        words = {"true": "1", "false": "0", "yes": "1", "no": "0", "none": "0"}
        if inner.lower() in words:
            return [words[inner.lower()]]
        return ["1" if numbers and numbers[0] else "0"] if numbers else ["1", "0"]
    if kind is ParamKind.SIZE:
        return ["C"]
    return []
