"""Remove the edge that closes a cycle (NAD203)."""
from __future__ import annotations

import re

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind

KIND = FixKind("break-cycle", UNSAFE, ("NAD203",), "Remove the edge that closes a cycle.", """
    The verifier names the edge that closes the cycle (`remove or redirect the edge 7->3`); the
    fix removes that wire. Another fix may then feed what it leaves without input.
""", order=20)

_EDGE = re.compile(r"the edge (\w+)->(\w+)")


def candidates(ctx, diagnostic):
    match = _EDGE.search(diagnostic.help or "")
    if match is None:
        return
    edit = ctx.editor()
    for index, edge in enumerate(ctx.block.edges):
        if str(edge.target) != match.group(2):
            continue
        for position, source in enumerate(edge.sources):
            if str(source) == match.group(1):
                edit.remove_wire(index, position)
                yield edit.fix(KIND.name, f"remove the edge {source}->{edge.target}, which closes a cycle", UNSAFE)
                return
