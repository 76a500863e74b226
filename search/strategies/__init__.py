"""Search strategies, one per module, behind one interface (`base.Strategy`).

| name | module | what it does |
|---|---|---|
| `random` | `random.py` | random search: draw cells uniformly without replacement (`--space nb201`) |
| `walk` | `walk.py` | random mutation walk: mutate a uniformly chosen node of the tree |
| `local` | `local.py` | local search (White et al. 2020): best improving neighbour, restart at a local optimum |
| `rea` | `rea.py` | regularized evolution, asynchronous (population 20, sample 5 by default) |
| `tree` | `tree.py` | a parent-selection policy (NADER's DFS/BFS mix, top-k, Pareto) picks the node to mutate |
| `nader` | `nader.py` | NADER's LLM agents: Proposer, Modifier with compiler feedback, Reflector (docs/agents.md) |
| `genius` | `genius.py` | GENIUS: the LLM proposes the next architecture from the history of accuracies (docs/search.md) |
| `fairnad` | `fairnad.py` | FairNAD's stages per round: fair ideas, Pareto-aware refinement, iterative LLM mutation (docs/search.md) |

Add a strategy by writing a module with a `Strategy` subclass and listing it here.
"""
from __future__ import annotations

from typing import Dict, Type

from nader.runtime.errors import ConfigError

from .base import Candidate, Option, Strategy, mutation_candidate
from .random import RandomStrategy
from .rea import REAStrategy
from .nader import NaderStrategy
from .fairnad import FairNADStrategy
from .genius import GeniusStrategy
from .tree import TreeStrategy
from .walk import WalkStrategy
from .local import LocalStrategy

STRATEGIES: Dict[str, Type[Strategy]] = {s.name: s for s in (RandomStrategy, REAStrategy, TreeStrategy,
                                                             NaderStrategy, GeniusStrategy, FairNADStrategy,
                                                             WalkStrategy, LocalStrategy)}


def get_strategy(name: str) -> Type[Strategy]:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGIES)}") from None


__all__ = ["Candidate", "Option", "STRATEGIES", "Strategy", "get_strategy", "mutation_candidate"]
