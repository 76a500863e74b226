"""Uniform selection over every valid node (random search's parent choice)."""
from __future__ import annotations

import random
from typing import Optional

from ..tree import TreeNode, Tree


def select_uniform(tree: Tree, rng: random.Random) -> Optional[TreeNode]:
    """Any node that verified and fits the budget, trained or not, with equal probability.

    It does not look at results, so with the same seed it proposes the same tree on any
    executor, whatever order trials finish in.
    """
    nodes = tree.valid()
    return rng.choice(nodes) if nodes else None
