"""The modification tree in memory: what strategies and parent-selection policies see.

A :class:`TreeNode` carries what choosing a parent may use: structure, status, cost and the
*validation* accuracy. Test accuracy is not on it at all (it stays in the store and in reports),
so no strategy can select on it, as the NAS-Bench-201 protocol requires.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

# An architecture's status. Rejected ones never train; valid ones have a fitted text.
STATUSES = ("proposed", "invalid", "duplicate", "over-budget", "screened-out", "training", "ok", "pruned", "diverged",
            "failed", "interrupted", "untrained")  # interrupted: by the machine (disk full, ...), trained again on resume
# untrained: the root of a search with `--root none`, a place in the tree that is never a trial
# pruned: a Python objective stopped early by the study's pruner, with its last reported value (a lower rung)
REJECTED = frozenset({"invalid", "duplicate", "over-budget"})
VALID = frozenset({"proposed", "screened-out", "training", "ok", "pruned", "diverged", "failed", "interrupted",
                   "untrained"})
PENDING = frozenset({"proposed", "training", "interrupted"})  # sent (or to be sent) to an evaluator
FINAL = frozenset({"ok", "pruned", "diverged", "failed"})  # evaluated
TRIALS = PENDING | FINAL  # what --trials counts


@dataclass
class TreeNode:
    arch_id: int
    parent_id: Optional[int]
    depth: int
    status: str
    text: Optional[str] = None
    hash: Optional[str] = None
    duplicate_of: Optional[int] = None
    origin: str = "mutation"
    operator: Optional[str] = None
    change: dict = field(default_factory=dict)
    widths: Optional[List[int]] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    valid_acc: Optional[float] = None  # mean over the ok seeds, percent
    finished: Optional[float] = None
    seeds_done: int = 0
    attempts: int = 1
    rung: int = 0  # multi-fidelity searches: the highest rung entered (its valid_acc once finished)
    objectives: dict = field(default_factory=dict)  # reported objectives beyond valid_acc (latency, a user's)

    @property
    def score(self) -> Optional[float]:
        """What selection maximises: validation accuracy of a successfully trained architecture, or
        of a pruned one at the step it stopped (as a lower rung's, which `Tree.best` ranks below)."""
        return self.valid_acc if self.status in ("ok", "pruned") else None


class Tree:
    def __init__(self, nodes: List[TreeNode] = ()):
        self.nodes: Dict[int, TreeNode] = {}
        self.children: Dict[int, List[int]] = {}
        self.by_hash: Dict[str, List[int]] = {}
        for n in nodes:
            self.add(n)

    def add(self, node: TreeNode) -> None:
        self.nodes[node.arch_id] = node
        self.children.setdefault(node.arch_id, [])
        if node.parent_id is not None:
            self.children.setdefault(node.parent_id, []).append(node.arch_id)
        if node.hash and node.status in VALID:
            self.by_hash.setdefault(node.hash, []).append(node.arch_id)

    def update(self, node: TreeNode) -> None:
        """Replace a node's record (same id and place in the tree)."""
        old = self.nodes[node.arch_id]
        if old.hash and old.hash != node.hash and old.arch_id in self.by_hash.get(old.hash, []):
            self.by_hash[old.hash].remove(old.arch_id)
        self.nodes[node.arch_id] = node

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[TreeNode]:
        return iter(self.nodes[k] for k in sorted(self.nodes))

    def __getitem__(self, arch_id: int) -> TreeNode:
        return self.nodes[arch_id]

    @property
    def next_id(self) -> int:
        return max(self.nodes) + 1 if self.nodes else 0

    @property
    def root(self) -> Optional[TreeNode]:
        return self.nodes.get(0)

    def kids(self, arch_id: int) -> List[TreeNode]:
        return [self.nodes[k] for k in self.children.get(arch_id, [])]

    def valid(self) -> List[TreeNode]:
        """Architectures that verified and fit the budget (possible parents)."""
        return [n for n in self if n.status in VALID]

    def scored(self) -> List[TreeNode]:
        """Architectures trained successfully, with their validation accuracy."""
        return [n for n in self if n.score is not None]

    def trials(self) -> int:
        return sum(1 for n in self.nodes.values() if n.status in TRIALS)

    def best(self) -> Optional[TreeNode]:
        """The highest rung (multi-fidelity searches; a pruned trial stopped below its own), then the
        highest validation accuracy; ties go to fewer parameters, then the earlier architecture."""
        scored = self.scored()
        if not scored:
            return None
        return min(scored, key=lambda n: (-n.rung, n.status == "pruned", -n.score,
                                          n.params if n.params is not None else 0, n.arch_id))
