"""The complete table of diagnostic codes, and a code by its number or name.

A code is declared (`define_code` in `nader.dsl.diagnostics`) beside the check that reports it,
and registered when its module is imported: the front end's (NAD1xx) in `dsl/parse_codes.py`,
structure (NAD2xx) and shapes (NAD3xx) in `compiler/passes/`, lint (NAD4xx) in each rule's module
under `compiler/lint/rules/`. The front end stands below the compiler and cannot import those
modules, so the table is complete where they are all imported: here. `nadc explain`, lint's
selectors, the language server, the docs and the tests read it from this module.
"""
from __future__ import annotations

from typing import Optional

# Imported for what importing them declares: every module that declares codes.
from nader.compiler import lint as _lint  # noqa: F401 - NAD4xx (the package imports every rule)
from nader.compiler import passes as _passes  # noqa: F401 - NAD2xx, NAD3xx
from nader.dsl import parse_codes as _parse_codes  # noqa: F401 - NAD1xx
from nader.dsl.diagnostics import Code, registered_codes


def code_table() -> dict[str, Code]:
    """Every diagnostic code, by number."""
    return registered_codes()


def find_code(text: str) -> Optional[Code]:
    """A code by its number (`NAD104`, `nad104`) or its name (`unknown-operation`)."""
    table = code_table()
    key = text.strip()
    return table.get(key.upper()) or next((c for c in table.values() if c.name == key.lower()), None)


__all__ = ["code_table", "find_code"]
