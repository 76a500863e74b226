"""`tree`: NADER's search over the modification tree, with graph-rewrite mutations as the proposer.

NADER's Proposer picks a parent with a parent-selection policy and its Modifier rewrites it;
this strategy keeps the policy and replaces the LLM agents by one random mutation, which makes
it the offline counterpart (and ablation baseline) of the LLM strategies. The policy is an
option: `nader` (NADER's DFS/BFS mix, default), `top-k`, `pareto` or `uniform`; see
`nader.search.selection`.

With several objectives (`--objective`), the policies rank nodes by non-domination (pymoo's
sorting over the objectives): a node's score is minus its front's index. `pareto` keeps its own
(accuracy, parameters, FLOPs) sorting.
"""
from __future__ import annotations

from dataclasses import replace

from ..objectives import ranks
from ..selection import POLICIES
from ..tree import Tree
from .base import Strategy
from .catalog import DECLARED


class TreeStrategy(Strategy):
    name = "tree"
    summary, options = DECLARED[name]

    def ask(self, tree, rng):
        if not self.several or self.settings["selection"] == "pareto":
            return self._select(tree, rng)
        # Several objectives: the policies see each node's non-domination rank as its score.
        rank = ranks([n for n in tree if n.status == "ok"], self.objectives)
        ranked = Tree([replace(n, valid_acc=-float(rank[n.arch_id])) if n.arch_id in rank
                       else replace(n, valid_acc=None, status="diverged" if n.status == "ok" else n.status)
                       for n in tree])
        chosen = self._select(ranked, rng)
        return None if chosen is None else tree[chosen.arch_id]

    def _select(self, tree, rng):
        s = self.settings
        policy = s["selection"]
        if policy == "nader":
            return POLICIES[policy](tree, rng, dfs=s["dfs"], width=s["width"])
        if policy == "top-k":
            return POLICIES[policy](tree, rng, k=s["k"])
        return POLICIES[policy](tree, rng)
