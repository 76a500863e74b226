"""Registering strategies and evaluators from outside the package: a public function or an entry point.

    import nader.search
    nader.search.register_strategy(MyStrategy)            # a Strategy subclass with its own `name`
    nader.search.register_evaluator("mylab", make)        # make(config, store, depths) -> Evaluator

An installed package may declare them instead, and they load the first time a name is not
found (``nader-search run --strategy NAME``, ``--evaluator NAME[:ARG]``)::

    [project.entry-points."nader.strategies"]
    mine = "mypkg.search:MyStrategy"
    [project.entry-points."nader.evaluators"]
    mylab = "mypkg.search:make_evaluator"

A registered evaluator produces whatever objectives it reports (`SeedOutcome.objectives`), so a
search using one may name objectives the CLI does not know.
"""
from __future__ import annotations

from importlib.metadata import entry_points
from typing import Callable, Dict, Optional

from nader.runtime.errors import ConfigError

STRATEGY_GROUP = "nader.strategies"
EVALUATOR_GROUP = "nader.evaluators"
RESERVED_EVALUATORS = frozenset({"training", "nats-bench", "nas-bench-201", "table", "python"})

EVALUATORS: Dict[str, Callable] = {}
_loaded: set = set()


def register_evaluator(name: str, factory: Callable) -> Callable:
    """Make ``--evaluator NAME`` (or ``NAME:ARG``) build its evaluator with
    ``factory(config, store, depths)``; the config's ``evaluator`` string carries ARG."""
    if not isinstance(name, str) or not name or ":" in name or name in RESERVED_EVALUATORS:
        raise ValueError(f"an evaluator name is a word other than {', '.join(sorted(RESERVED_EVALUATORS))}, "
                         f"not {name!r}")
    if not callable(factory):
        raise TypeError(f"register_evaluator takes a callable factory, not {factory!r}")
    other = EVALUATORS.get(name)
    if other is not None and other is not factory:
        raise ValueError(f"an evaluator named {name!r} exists already")
    EVALUATORS[name] = factory
    return factory


def load_entry_points(group: str, register: Optional[Callable] = None) -> None:
    """Register what installed packages declare in `group` (once per process) with `register`
    (strategies: `strategies.register_strategy`, which passes itself, so this module needs no
    strategy); evaluators by their entry point's name. A broken entry point is refused with one
    line naming it."""
    if group in _loaded:
        return
    _loaded.add(group)
    for ep in entry_points(group=group):
        try:
            obj = ep.load()
        except Exception as exc:  # an installed plugin's import error, told as a configuration problem
            raise ConfigError(f"entry point {ep.name} = {ep.value} ({group}) cannot be loaded: "
                              f"{type(exc).__name__}: {exc}") from None
        if register is not None:
            register(obj)
        else:
            register_evaluator(ep.name, obj)


def evaluator_factory(name: str) -> Optional[Callable]:
    """The registered evaluator factory called `name` (entry points included), or None."""
    if not name or name in RESERVED_EVALUATORS:
        return None
    if name not in EVALUATORS:
        load_entry_points(EVALUATOR_GROUP)
    return EVALUATORS.get(name)


__all__ = ["EVALUATORS", "register_evaluator", "load_entry_points", "evaluator_factory"]
