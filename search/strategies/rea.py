"""`rea`: regularized evolution (Real et al., AAAI 2019), asynchronous.

The population holds the last ``population`` architectures that finished training (oldest
first). Each step samples ``sample_size`` of them uniformly without replacement and mutates the
one with the best validation accuracy; every architecture that finishes training joins the
population and pushes out the *oldest* member (age-based removal, the "regularization"), not the
worst. Until the population is full, steps fill it: in a space with a uniform distribution
(`--space nb201`) with cells drawn uniformly among those not in the tree, as NATS-Bench's
`regularized_ea.py` fills its initial population with `random_arch()`; the root is not trained
there by default (`--root none`), and with `--root train` it is trial 1 but not a member. The
block language has no uniform distribution, so there the steps mutate a uniformly chosen valid
node of the tree instead (the initial population grown from the root). With `--warm-start N`
the filling steps take the warm start's pool, best first (`Strategy.draw`): the first population
is the best the proxy found.

It is asynchronous as in the paper's distributed version: a step runs whenever a worker is
free, with the population as it is at that moment, so no worker waits for a generation. A
diverged architecture joins the population with its accuracy (or as the worst, without one); a
crashed one (killed, out of memory) does not, since it was never evaluated.

With several objectives (`--objective`), the tournament's winner is a member of the sample's
non-dominated set (pymoo's sorting; ties go to the first objective, then the earlier).
"""
from __future__ import annotations

import collections

from ..objectives import best_of
from ..selection.uniform import select_uniform
from .base import StopSearch, Strategy
from .catalog import DECLARED


class REAStrategy(Strategy):
    name = "rea"
    summary, options = DECLARED[name]
    rootless = True  # --space nb201: no root trial by default (--root none)
    draws_pool = True  # --warm-start: the first population is the pool's best

    def __init__(self, **options):
        super().__init__(**options)
        self.population = collections.deque()
        self.filling = False
        self.keys: dict = {}  # arch_id -> cell string (uniform spaces): each node read once
        self.tree = None

    def tell(self, node, rng):
        if node.status not in ("ok", "diverged"):
            return
        if self.space is not None and self.space.uniform and node.parent_id is None:
            return  # the root: the population is uniform draws (NATS-Bench's random_arch)
        self.population.append(node)
        if len(self.population) > self.settings["population"]:
            self.population.popleft()  # age-based removal

    def ask(self, tree, rng):
        self.tree = tree
        self.filling = len(self.population) < self.settings["population"]
        if self.filling:
            return tree.root if self._fresh(tree) else select_uniform(tree, rng)
        members = list(self.population)
        sample = rng.sample(members, min(self.settings["sample_size"], len(members)))
        if self.several:  # the sample's non-dominated set wins (lowest rank, then the first objective)
            winner = best_of(sample, self.objectives)
            if winner is not None:
                return winner
        return max(sample, key=lambda n: n.valid_acc if n.valid_acc is not None else float("-inf"))

    def _fresh(self, tree) -> bool:
        """Whether a filling step draws a fresh architecture (the warm start's pool, a uniform draw)
        rather than mutating a tree node (the block language without a pool)."""
        return (self.space is not None and self.space.uniform) or self.pool_left(tree)

    def propose(self, parent, rng):
        if not (self.filling and self._fresh(self.tree)):
            return super().propose(parent, rng)
        if self.space.uniform:
            for node in self.tree:
                if node.arch_id not in self.keys:
                    self.keys[node.arch_id] = self.space.key(node)
        cand = self.draw(rng, self.tree, {k for k in self.keys.values() if k})
        if cand is None:
            raise StopSearch("every architecture of the space is in the tree", code="exhausted")
        return cand
