"""`random`: random search, as NAS-Bench-201 defines it: architectures drawn uniformly from the space.

Each step draws a cell uniformly among those not yet in the tree (sampling without
replacement; `Space.sample`), from the decision's `rng`, which the loop seeds from the run's
seed and the id the architecture will get: the same seed draws the same cells, and a resumed
run, whose tree holds every cell drawn before, draws what the uninterrupted run would have. The
samples are not derived from any architecture; they hang under the root, which is not trained
(`--root none`, the default here) unless `--root train` makes it trial 1. It never looks at results.

It needs a space with a uniform distribution (`--space nb201`: 15,625 cells). The block language
has none; there the random baseline is `walk`, the random mutation walk, and `random` is
refused with that hint (`refuse_space`). When every cell is in the tree the search stops
(`exhausted`). With `--warm-start N` the draws begin with the warm start's pool, best first
(`Strategy.draw`), and go on uniformly once it is used up.
"""
from __future__ import annotations

from typing import Optional

from nader.runtime.errors import ConfigError

from .base import StopSearch, Strategy
from .catalog import DECLARED


class RandomStrategy(Strategy):
    name = "random"
    summary, options = DECLARED[name]
    rootless = True  # --space nb201: no root trial by default (--root none)
    draws_pool = True  # --warm-start: the pool best first, then uniform draws

    def __init__(self, **options):
        super().__init__(**options)
        self.keys: dict = {}  # arch_id -> cell string (None outside the space): each node read once
        self.tree = None

    @classmethod
    def refuse_space(cls, space) -> Optional[str]:
        if not getattr(space, "uniform", False):
            name = getattr(space, "name", "language")
            return (f"random search draws architectures uniformly, and the {name} space has no uniform "
                    f"distribution; use --strategy walk (the random mutation walk) or --space nb201")
        return None

    def seen(self) -> set:
        for node in self.tree:
            if node.arch_id not in self.keys:
                self.keys[node.arch_id] = self.space.key(node)
        return {k for k in self.keys.values() if k}

    def ask(self, tree, rng):
        why = self.refuse_space(self.space)
        if why:
            raise ConfigError(why)
        self.tree = tree
        if len(self.seen()) >= self.space.size:
            raise StopSearch("every architecture of the space is in the tree", code="exhausted")
        return tree.root

    def propose(self, parent, rng):
        return self.draw(rng, self.tree, self.seen())

