"""`tree`: NADER's search over the modification tree, with graph-rewrite mutations as the proposer.

NADER's Proposer picks a parent with a parent-selection policy and its Modifier rewrites it;
this strategy keeps the policy and replaces the LLM agents by one random mutation, which makes
it the offline counterpart (and ablation baseline) of the LLM strategies. The policy is an
option: `nader` (NADER's DFS/BFS mix, default), `top-k`, `pareto` or `uniform`; see
`nader.search.selection`.
"""
from __future__ import annotations

from ..selection import POLICIES
from .base import Option, Strategy


class TreeStrategy(Strategy):
    name = "tree"
    summary = "a parent-selection policy (nader, top-k, pareto) picks the node to mutate"
    options = {
        "selection": Option(str, "nader", "parent-selection policy", choices=tuple(POLICIES)),
        "dfs": Option(float, 0.5, "nader: probability of a depth-first step", minimum=0.0),
        "width": Option(int, 3, "nader: children a node may have before it is closed", minimum=1),
        "k": Option(int, 5, "top-k: how many of the best nodes to choose among", minimum=1),
    }

    def ask(self, tree, rng):
        s = self.settings
        policy = s["selection"]
        if policy == "nader":
            return POLICIES[policy](tree, rng, dfs=s["dfs"], width=s["width"])
        if policy == "top-k":
            return POLICIES[policy](tree, rng, k=s["k"])
        return POLICIES[policy](tree, rng)
