"""`walk`: the random mutation walk on the modification tree.

Each step mutates a uniformly chosen valid node of the tree with a uniformly chosen mutation
(operator and site; see `nader.compiler.mutate`; one edge's operation in the nb201 space). It
never looks at results, so the same seed gives the same tree on every executor and with any
number of workers. It is a local walk from the root, not random search: `random` samples a
finite space uniformly (NAS-Bench-201's random search); the block language has no uniform
distribution, so there the walk is the random baseline.
"""
from __future__ import annotations

from ..selection.uniform import select_uniform
from .base import Strategy
from .catalog import DECLARED


class WalkStrategy(Strategy):
    name = "walk"
    summary, options = DECLARED[name]

    def ask(self, tree, rng):
        return select_uniform(tree, rng)
