"""`rea`: regularized evolution (Real et al., AAAI 2019), asynchronous.

The population holds the last ``population`` architectures that finished training (oldest
first). Each step samples ``sample_size`` of them uniformly without replacement and mutates the
one with the best validation accuracy; every architecture that finishes training joins the
population and pushes out the *oldest* member (age-based removal, the "regularization"), not the
worst. Until the population is full, steps mutate a uniformly chosen valid node of the tree
instead (the initial random population, grown from the root).

It is asynchronous as in the paper's distributed version: a step runs whenever a worker is
free, with the population as it is at that moment, so no worker waits for a generation. A
diverged architecture joins the population with its accuracy (or as the worst, without one); a
crashed one (killed, out of memory) does not, since it was never evaluated.
"""
from __future__ import annotations

import collections

from ..selection.uniform import select_uniform
from .base import Option, Strategy


class REAStrategy(Strategy):
    name = "rea"
    summary = "regularized evolution: tournament among the last P trained, oldest removed"
    options = {
        "population": Option(int, 20, "population size P (the last P trained architectures)", minimum=1),
        "sample_size": Option(int, 5, "tournament size S (sampled from the population)", minimum=1),
    }

    def __init__(self, **options):
        super().__init__(**options)
        self.population = collections.deque()

    def tell(self, node, rng):
        if node.status not in ("ok", "diverged"):
            return
        self.population.append(node)
        if len(self.population) > self.settings["population"]:
            self.population.popleft()  # age-based removal

    def ask(self, tree, rng):
        if len(self.population) < self.settings["population"]:
            return select_uniform(tree, rng)
        members = list(self.population)
        sample = rng.sample(members, min(self.settings["sample_size"], len(members)))
        return max(sample, key=lambda n: n.valid_acc if n.valid_acc is not None else float("-inf"))
