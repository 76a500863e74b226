"""Parent-selection policies: which node of the modification tree to modify next.

Each policy is a function ``select(tree, rng, **settings) -> TreeNode | None`` over the nodes that
trained successfully (their validation accuracy; test accuracy is never visible here). None
means no node qualifies yet (nothing has finished training). The search's strategies use them
(`tree`), and so will the LLM strategies (NADER's Proposer chooses its candidate network with
`nader`).

| policy | rule |
|---|---|
| `nader` | NADER's mix of depth-first and breadth-first search favouring high accuracy (`nader.py`) |
| `top-k` | uniformly among the k best by validation accuracy (`topk.py`) |
| `pareto` | NSGA-II binary tournament on non-domination rank, then crowding distance, over (accuracy, params, FLOPs) (`pareto.py`) |
| `uniform` | uniformly among every valid node (`uniform.py`) |
"""
from __future__ import annotations

from typing import Callable, Dict

from .nader import select_nader
from .pareto import select_pareto
from .topk import select_top_k
from .uniform import select_uniform

POLICIES: Dict[str, Callable] = {
    "nader": select_nader,
    "top-k": select_top_k,
    "pareto": select_pareto,
    "uniform": select_uniform,
}

__all__ = ["POLICIES", "select_nader", "select_pareto", "select_top_k", "select_uniform"]
