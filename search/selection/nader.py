"""NADER's candidate-network selection: depth-first and breadth-first search favouring accuracy.

What the paper states (NADER, CVPR 2025, section 3.3.2, "Candidate Network Selection"): the
Proposer selects the most promising node of the modification tree as the next network to
modify; it "prioritizes nodes with higher performance scores, indicating successful past
modifications", and "explores the network modification graph using a combination of depth-first
search (DFS) and breadth-first search (BFS). DFS allows for a deeper exploration of promising
paths within the graph, while BFS ensures a wider coverage of the search space." The paper gives
no formula, probabilities or expansion limit, so this module fixes them:

* A node is *open* while fewer than ``width`` of its children have been sent to training
  (rejected proposals do not count). Only trained nodes with a validation accuracy qualify.
* Each call flips a coin: with probability ``dfs`` a DFS step, otherwise a BFS step.
* **DFS step**: walk down from the root, each time to the child with the highest validation
  accuracy, as long as that child is at least as accurate as the node it came from (the path
  of successful modifications). Select the deepest open node on that path; if none is open,
  take a BFS step.
* **BFS step**: select, in the shallowest level of the tree that has an open node, the open
  node with the highest validation accuracy.
* Ties: fewer parameters, then the older node. When no node is open, the most accurate node.

Defaults: ``dfs=0.5``, ``width=3``.
"""
from __future__ import annotations

import random
from typing import List, Optional

from ..tree import TRIALS, TreeNode, Tree


def _key(n: TreeNode):
    return (-n.score, n.params if n.params is not None else 0, n.arch_id)


def _expanded(tree: Tree, n: TreeNode) -> int:
    return sum(1 for c in tree.kids(n.arch_id) if c.status in TRIALS)


def open_nodes(tree: Tree, width: int) -> List[TreeNode]:
    return [n for n in tree.scored() if _expanded(tree, n) < width]


def dfs_path(tree: Tree) -> List[TreeNode]:
    """The path from the root along the best child while accuracy does not drop."""
    node = tree.root
    if node is None:
        return []
    path = [node]
    while True:
        kids = [c for c in tree.kids(node.arch_id) if c.score is not None]
        if not kids:
            return path
        best = min(kids, key=_key)
        if node.score is not None and best.score < node.score:
            return path
        node = best
        path.append(node)


def bfs_choice(tree: Tree, width: int) -> Optional[TreeNode]:
    candidates = open_nodes(tree, width)
    if not candidates:
        return None
    level = min(n.depth for n in candidates)
    return min((n for n in candidates if n.depth == level), key=_key)


def dfs_choice(tree: Tree, width: int) -> Optional[TreeNode]:
    for node in reversed(dfs_path(tree)):
        if node.score is not None and _expanded(tree, node) < width:
            return node
    return None


def select_nader(tree: Tree, rng: random.Random, dfs: float = 0.5, width: int = 3) -> Optional[TreeNode]:
    scored = tree.scored()
    if not scored:
        return None
    choice = dfs_choice(tree, width) if rng.random() < dfs else None
    if choice is None:
        choice = bfs_choice(tree, width)
    return choice if choice is not None else min(scored, key=_key)
