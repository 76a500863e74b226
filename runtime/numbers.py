"""Number formats shared by the text tables of the runtime and the search (not a CLI module, so
the library can use them without importing a command line)."""
from __future__ import annotations


def human(n) -> str:
    """A count for tables: 1.23M, 45.60K."""
    if n is None:
        return "-"
    for unit, div in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.2f}{unit}"
    return str(n)
