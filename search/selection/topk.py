"""Top-k selection: a uniform choice among the k best nodes by validation accuracy."""
from __future__ import annotations

import random
from typing import Optional

from ..tree import TreeNode, Tree


def ranked(tree: Tree) -> list:
    """Trained nodes, best validation accuracy first (ties: fewer parameters, then older)."""
    return sorted(tree.scored(), key=lambda n: (-n.score, n.params if n.params is not None else 0, n.arch_id))


def select_top_k(tree: Tree, rng: random.Random, k: int = 5) -> Optional[TreeNode]:
    best = ranked(tree)[: max(1, int(k))]
    return rng.choice(best) if best else None
