"""`random`: random search on the modification tree.

Each step mutates a uniformly chosen valid node of the tree with a uniformly chosen mutation
(operator and site; see `nader.compiler.mutate`). It never looks at results, so the same seed
gives the same tree on every executor and with any number of workers.
"""
from __future__ import annotations

from ..selection.uniform import select_uniform
from .base import Strategy


class RandomStrategy(Strategy):
    name = "random"
    summary = "mutate a uniformly chosen node of the tree (random search)"
    options = {}

    def ask(self, tree, rng):
        return select_uniform(tree, rng)
