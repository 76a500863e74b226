"""NADER toolchain: the block language's compiler (`nadc`), runtime and agent loops.

The repository's top-level folders are this package's subpackages:
``dsl/`` is ``nader.dsl`` (front end and IR), ``compiler/`` is ``nader.compiler``
(passes, backends, CLI), ``runtime/``, ``agents/`` and ``grammar/`` likewise. ``nader.cli`` is
``nader-search``'s entry point, kept at the top so that it dispatches only downward.

This module itself, which Python runs before any module of the project, imports nothing of it and
holds what every floor may use: the version and `lazy_exports`, the one helper with which
`nader.dsl`, `nader.runtime`, `nader.compiler`, `nader.agents.knowledge` and `nader.search` import
their names on first use (PEP 562's module `__getattr__`), so that importing one submodule (say
`nader.dsl.diagnostics`) does not import the others (the parser and Lark, torch, numpy). Here it
costs `nadc verify` no module more to find and load.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

__version__ = "0.1.0"


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
