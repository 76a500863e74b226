"""Pareto selection: NSGA-II's parent choice on (validation accuracy, parameters, FLOPs).

NSGA-II (Deb et al. 2002) ranks a population by non-dominated sorting (front 0 is the Pareto
front: no other node is at least as accurate *and* at most as large in both parameters and
FLOPs, and strictly better in one) and, within a front, by crowding distance (isolated points
first, so the front stays spread). Parents are picked by binary tournament: two nodes drawn at
random, the lower rank wins, then the larger crowding distance, then the earlier node. The
sorting and the distances are pymoo's.
"""
from __future__ import annotations

import random
from typing import List, Optional

from nader.runtime.errors import ConfigError

from ..tree import TreeNode, Tree


def rank_and_crowding(nodes: List[TreeNode]):
    """(front index, crowding distance) per node, as NSGA-II computes them."""
    import numpy as np

    try:
        from pymoo.operators.survival.rank_and_crowding.metrics import calc_crowding_distance
        from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting
    except ImportError:
        raise ConfigError("Pareto selection needs pymoo: pip install 'nader-toolchain[pareto]'") from None

    F = np.array([[-n.score, float(n.params or 0), float(n.flops or 0)] for n in nodes], dtype=float)
    fronts = NonDominatedSorting().do(F)
    rank = [0] * len(nodes)
    crowd = [0.0] * len(nodes)
    for r, front in enumerate(fronts):
        dist = calc_crowding_distance(F[front]) if len(front) > 2 else [float("inf")] * len(front)
        for i, d in zip(front, dist):
            rank[int(i)] = r
            crowd[int(i)] = float(d)
    return rank, crowd


def pareto_front(tree: Tree) -> List[TreeNode]:
    nodes = tree.scored()
    if not nodes:
        return []
    rank, _ = rank_and_crowding(nodes)
    return [n for n, r in zip(nodes, rank) if r == 0]


def select_pareto(tree: Tree, rng: random.Random) -> Optional[TreeNode]:
    nodes = tree.scored()
    if len(nodes) < 2:
        return nodes[0] if nodes else None
    rank, crowd = rank_and_crowding(nodes)
    a, b = rng.sample(range(len(nodes)), 2)
    key = lambda i: (rank[i], -crowd[i], nodes[i].arch_id)  # noqa: E731 - lower is better
    return nodes[min(a, b, key=key)]
