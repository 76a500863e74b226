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
from ._index import KINDS


@lru_cache(maxsize=1)
def discovered() -> tuple[ModuleType, ...]:
    """The kind modules of this package, in name order."""
    modules = [_module(info.name) for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    return tuple(sorted(modules, key=lambda m: m.KIND.name))


#: The order of each kind (the front end's and the modules', from the index), by name: how the engine breaks ties.
_ORDERS: dict[str, int] = {**{k.name: k.order for k in BUILT_IN}, **{name: order for name, _, order, _ in KINDS.values()}}


@lru_cache(maxsize=None)
def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def order_of(kind: str) -> int:
    """A kind's order among equally good candidates (50 for a name no kind has)."""
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


class KindEntry:
    """A kind module as the index declares it; the module itself is imported on first use (`module`, then a
    plain slot: a search reads it for every kind of every error it searches)."""

    __slots__ = ("module_name", "name", "safety", "order", "codes", "module")

    def __init__(self, module_name: str, name: str, safety: str, order: int, codes: tuple[str, ...]):
        self.module_name, self.name, self.safety, self.order, self.codes = module_name, name, safety, order, codes

    def __getattr__(self, name: str) -> ModuleType:
        """`module`, on first use (an unset slot is read here)."""
        if name != "module":
            raise AttributeError(name)
        module = self.module = _module(self.module_name)
        return module


@lru_cache(maxsize=256)
def kinds_for(code: str) -> tuple[KindEntry, ...]:
    """The kinds answering `code`, in their order, from the index (`_index.KINDS`, generated from the modules'
    declarations): a search imports a kind's module only when it reaches it, so one failing block loads a few
    kinds, and a candidate that verifies first leaves the later kinds unloaded."""
    entries = [KindEntry(module, *row) for module, row in KINDS.items() if code in row[3] or "*" in row[3]]
    return tuple(sorted(entries, key=lambda e: (e.order, e.name)))
