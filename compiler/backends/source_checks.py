"""The width checks of emitted standalone source: `__init__` refuses the sizes `build_torch` refuses.

`build_torch` raises BuildError when a block's constraints (`C % 4 == 0`, ...) fail at the sizes it
is built for; the emitted class needs only torch, so it raises ValueError with the same text.
"""
from __future__ import annotations

from nader.compiler.passes.symbolic import Constraint, to_python


def constraint_python(constraint: Constraint) -> str:
    """A Python boolean expression that is true where `constraint` holds."""
    size = constraint.size
    d = size.denominator()
    if not constraint.modulus:
        return f"{to_python(size)} >= 1"  # floor(p) >= 1 exactly when p >= 1
    if d == 1:
        return f"({to_python(size)}) % {constraint.modulus} == 0"
    return f"({to_python(size.scale(d))}) % {constraint.modulus * d} == 0"  # p = q/d is a multiple of m


def check_lines(block_name: str, constraints: list, height: "str | None", indent: str = "        ") -> list[str]:
    """Lines of `__init__` that raise ValueError when a width constraint fails (none without constraints).

    `height` is the source of the input resolution where the class knows it (`"H"`, its argument, or
    the fixed size it was verified at); constraints on H and W are then checked too, as build_torch does."""
    with_resolution = height is not None
    known = {"C", "dim", "H", "W"} if with_resolution else {"C", "dim"}
    checks = [c for c in constraints if c.size.free_symbols() <= known]
    if not checks:
        return []
    at = ' and H=W={H}' if with_resolution else ""
    pairs = ", ".join(f"({str(c)!r}, {constraint_python(c)})" for c in checks)
    lines = [f"{indent}H = W = {height}" if with_resolution else None,
             f"{indent}broken = [text for text, holds in ({pairs},) if not holds]",
             f"{indent}if broken:",
             f"{indent}    raise ValueError({'block ' + block_name + ' cannot be built at '!r} + "
             f"f\"C={{C}}, dim={{dim}}{at}: it requires \" + \", \".join(broken))"]
    return [line for line in lines if line is not None]
