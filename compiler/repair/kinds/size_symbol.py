"""Replace a name that is not a size symbol, or H, W, B in a layer parameter, by a channel symbol (NAD109, NAD210)."""
from __future__ import annotations

import re

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind

KIND = FixKind("channel-symbol", UNSAFE, ("NAD109", "NAD210"),
               "Write a layer's size with `C` or `dim` where it uses an unknown name or `H`, `W`, `B`.", """
    `Conv2d(out_channels=channels)` and `Linear(out_channels=H)` become `out_channels=C` (or
    `dim`, whichever verifies).
""", order=20)

_QUOTED = re.compile(r"`(\w+)`")


def candidates(ctx, diagnostic):
    node = ctx.node_at(diagnostic)
    if node is None:
        return
    line = (ctx.lines[node.span.line - 1] if node.span.line <= len(ctx.lines) else "").rstrip("\r")
    if diagnostic.code.code == "NAD109":
        names = [line[diagnostic.span.col - 1:diagnostic.span.end_col - 1]]
    else:
        names = [n for n in _QUOTED.findall(diagnostic.message) if n in ("H", "W", "B")]
    head, _, tail = line.partition(":")
    code, hash_, comment = tail.partition("#")
    for symbol in ("C", "dim"):
        text = code
        for name in names:
            if name:
                text = re.sub(rf"\b{re.escape(name)}\b", symbol, text)
        if text == code:
            return
        edit = ctx.editor()
        edit.node_lines[node.span.line] = f"{head}:{text}{hash_}{comment}"
        yield edit.fix(KIND.name, f"write `{symbol}` for {', '.join(f'`{n}`' for n in names)} in node {node.id}", UNSAFE)
