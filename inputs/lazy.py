"""A package's names imported from their modules on first use (PEP 562's module `__getattr__`).

`nader.dsl`, `nader.runtime`, `nader.compiler`, `nader.agents.knowledge` and `nader.search` export
their names this way, so importing one submodule (say `nader.dsl.diagnostics`) does not import the
others (the parser and Lark, torch, numpy) and `nadc` and `nader-search --help` start fast. It is
here, on floor 0 with nothing of the project below it, because every floor uses it.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_exports(namespace: dict, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list]]:
    """`__getattr__` and `__dir__` for the package whose globals are `namespace`.

    `exports` maps each name to the submodule that defines it, relative to the package (`"ops"`
    for `nader.dsl.ops`); a name is imported on first use, then kept in the package's globals."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
