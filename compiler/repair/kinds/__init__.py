"""The fix kinds: one module each, found by discovery.

A module declares `KIND = FixKind(...)` (its name, safety, the codes it answers and its
documentation, which `nadc explain KIND` prints) and `candidates(ctx, diagnostic)`, the
fixes it proposes for one diagnostic, most plausible first. It imports `FixKind` from
`..kind`, never from this package, which imports it. It proposes; the engine
(`engine.py`) applies each candidate, verifies the result and keeps the best.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType

from ..kind import BUILT_IN, FixKind


@lru_cache(maxsize=1)
def discovered() -> tuple[ModuleType, ...]:
    """The kind modules of this package, in name order."""
    modules = [importlib.import_module(f"{__name__}.{info.name}")
               for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    return tuple(sorted(modules, key=lambda m: m.KIND.name))


@lru_cache(maxsize=1)
def all_kinds() -> dict[str, FixKind]:
    """Every fix kind by name: the built-in ones and the discovered ones (one dict, not to be changed:
    `nadc verify` asks for it per failing file)."""
    kinds = {k.name: k for k in BUILT_IN}
    for module in discovered():
        if module.KIND.name in kinds:
            raise ValueError(f"fix kind {module.KIND.name} declared twice")
        kinds[module.KIND.name] = module.KIND
    return dict(sorted(kinds.items()))


@lru_cache(maxsize=256)
def kinds_for(code: str) -> tuple[ModuleType, ...]:
    """The discovered kind modules answering `code`, in their order."""
    return tuple(sorted((m for m in discovered() if code in m.KIND.codes or "*" in m.KIND.codes), key=lambda m: (m.KIND.order, m.KIND.name)))
