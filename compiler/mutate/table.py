"""The one table of mutation operators, found in `operators/`, in a fixed order (the order random
choices draw from: `draw_order`, then name)."""
from __future__ import annotations

from .base import MutationOperator
from .operators import CLASSES

OPERATORS: dict[str, MutationOperator] = {cls.name: cls() for cls in sorted(
    (cls for classes in CLASSES.values() for cls in classes), key=lambda cls: (cls.draw_order, cls.name))}


def find_operator(name: str) -> MutationOperator | None:
    return OPERATORS.get(name.strip().lower())


def reference_table() -> str:
    """The operators as a markdown table (docs/mutations.md holds a copy; a test keeps them in step)."""
    rows = ["| operator | what it does | arguments |", "|---|---|---|"]
    for op in OPERATORS.values():
        rows.append(f"| `{op.name}` | {op.summary} | {', '.join(f'`{a}`' for a in op.arguments)} |")
    return "\n".join(rows)
