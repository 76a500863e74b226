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
from ._index import CODES


@lru_cache(maxsize=1)
def discovered() -> tuple[ModuleType, ...]:
    """The kind modules of this package, in name order."""
    modules = [_module(info.name) for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    return tuple(sorted(modules, key=lambda m: m.KIND.name))


#: The order of each kind imported so far (and of the front end's), by name: how the engine breaks ties.
_ORDERS: dict[str, int] = {k.name: k.order for k in BUILT_IN}


@lru_cache(maxsize=None)
def _module(name: str) -> ModuleType:
    module = importlib.import_module(f"{__name__}.{name}")
    _ORDERS[module.KIND.name] = module.KIND.order
    return module


def order_of(kind: str) -> int:
    """A kind's order among equally good candidates: its own once imported (every candidate's is), else 50."""
    return _ORDERS.get(kind, 50)


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
    """The kind modules answering `code`, in their order; only those are imported (`_index.CODES`, generated
    from their declarations): one failing block need not load every kind."""
    modules = [_module(name) for name, codes in CODES.items() if code in codes or "*" in codes]
    return tuple(sorted(modules, key=lambda m: (m.KIND.order, m.KIND.name)))
