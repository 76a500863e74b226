"""Search strategies, one per module, behind one interface (`base.Strategy`).

A strategy is listed by name in `LAZY_STRATEGIES` (``"name": "module:Class"``, like
`nader/cli.py`'s commands) and imported the first time it is used, so listing names (`in`,
`keys()`, error messages) imports none: `nader-search --help` does not load the LLM strategies'
dependencies. A new strategy is one file plus its line in the table (tests/search name a module
whose strategy is missing from it); `nader-search run --help`, docs/search.md's table (generated
by `scripts/gen_docs.py`) and the tests pick it up. Strategies from outside the package are added
through `nader.search.register_strategy` or a `nader.strategies` entry point.
"""
from __future__ import annotations

import importlib
from typing import Dict, Iterator, MutableMapping, Type

from nader.runtime.errors import ConfigError

from ..candidate import Candidate
from ..registry import STRATEGY_GROUP, load_entry_points
from .base import Option, Strategy, mutation_candidate

#: Built-in strategies by name, in module-name order: name -> "module:Class" (module under this package).
LAZY_STRATEGIES: Dict[str, str] = {
    "fairnad": "fairnad:FairNADStrategy",
    "genius": "genius:GeniusStrategy",
    "local": "local:LocalStrategy",
    "nader": "nader:NaderStrategy",
    "optuna": "optuna_sampler:OptunaStrategy",
    "random": "random:RandomStrategy",
    "rea": "rea:REAStrategy",
    "tree": "tree:TreeStrategy",
    "walk": "walk:WalkStrategy",
}


class _Strategies(MutableMapping[str, Type[Strategy]]):
    """Strategy classes by name: the built-in ones imported on first access, then the registered."""

    def __init__(self, lazy: Dict[str, str]) -> None:
        self._lazy = dict(lazy)
        self._classes: Dict[str, Type[Strategy]] = {}

    def __getitem__(self, name: str) -> Type[Strategy]:
        if name not in self._classes and name in self._lazy:
            module, attr = self._lazy[name].split(":")
            cls = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
            if getattr(cls, "name", None) != name:
                raise ImportError(f"LAZY_STRATEGIES lists {name!r} as {self._lazy[name]}, which is named "
                                  f"{getattr(cls, 'name', None)!r}")
            self._classes[name] = cls
        return self._classes[name]

    def __setitem__(self, name: str, cls: Type[Strategy]) -> None:
        self._lazy.pop(name, None)
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        found = name in self
        self._lazy.pop(name, None)
        self._classes.pop(name, None)
        if not found:
            raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._lazy or name in self._classes

    def __iter__(self) -> Iterator[str]:
        yield from self._lazy
        yield from (name for name in self._classes if name not in self._lazy)

    def __len__(self) -> int:
        return len(set(self._lazy) | set(self._classes))

    def __repr__(self) -> str:
        return f"STRATEGIES({', '.join(self)})"


STRATEGIES: MutableMapping[str, Type[Strategy]] = _Strategies(LAZY_STRATEGIES)


def register_strategy(cls) -> type:
    """Make a `Strategy` subclass available by its `name` (also usable as a class decorator).
    Registering the same class again is harmless; another class under a taken name is refused."""

    if not (isinstance(cls, type) and issubclass(cls, Strategy)) or cls is Strategy:
        raise TypeError(f"register_strategy takes a Strategy subclass, not {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or name == Strategy.name:
        raise ValueError(f"{cls.__name__} needs its own `name` (a class attribute) to be registered")
    other = STRATEGIES.get(name)
    if other is not None and other is not cls:
        raise ValueError(f"a strategy named {name!r} exists already ({other.__module__}.{other.__name__})")
    STRATEGIES[name] = cls
    return cls


def get_strategy(name: str) -> Type[Strategy]:
    """The strategy class called `name`: built in, registered (`nader.search.register_strategy`)
    or declared by an installed package's `nader.strategies` entry point."""
    if name not in STRATEGIES:
        load_entry_points(STRATEGY_GROUP, register_strategy)
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGIES)}") from None


__all__ = ["Candidate", "LAZY_STRATEGIES", "Option", "STRATEGIES", "Strategy", "get_strategy",
           "mutation_candidate", "register_strategy"]
