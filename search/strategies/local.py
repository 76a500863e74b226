"""`local`: local search as White et al. (2020, "Local search is state of the art for NAS
benchmarks") define it: evaluate the whole neighbourhood of the current architecture, move to
its best neighbour if that one is better, and at a local optimum restart from a random
architecture.

In the nb201 space every climb starts at a cell drawn uniformly among those not in the tree (the
root is not trained there by default, `--root none`; with `--root train` it is trial 1 and counts
towards the best found, but no climb starts there: a fixed start would make every seed's first climb the same). A neighbourhood is
every cell one edge away (6 edges x 4 other operations = 24), proposed in an order drawn from the
decision's rng, as NASLib shuffles its `get_nbhd`. In the block language, which has no uniform
distribution, the first climb starts at the root and a restart is one random mutation of a
uniformly chosen trained architecture (a step of `walk`); a neighbourhood there is the single
mutations the operators offer (`nader.compiler.mutate`: every operator's sites, at most
``neighbours`` of them, spread over the operators).

A neighbour already in the tree is not evaluated again: its result is reused (an isomorphic one
is the duplicate's original). The comparison is the search's signal, the validation accuracy; a
move needs a strictly higher one, ties go to the earlier evaluated neighbour. A climb whose start
has no result (a hole in a table) ends at once. The node that starts climb k carries ``climb: k``
in its ``change``.

With several objectives (`--objective`), the best neighbour is one of the neighbourhood's
non-dominated set (pymoo's sorting; ties to the first objective) and a move needs a neighbour
that dominates the current architecture.

Where it differs from NASLib's `LocalSearch`: that one starts from the best of ``num_init``
random architectures; this one, like the paper's Algorithm 1, from one.

With `--warm-start N` the climbs start at the warm start's pool, best first (`Strategy.draw`; in
the block language too, where the first climb then starts at the pool's best rather than at the
root), and at uniform draws (or random mutations) once the pool is used up.

State: the climb (current architecture, climbs so far) is a function of the tree, replayed on the
first call after a start or resume; results come from the tree's nodes, which the loop updates
before `tell`. Nothing is kept between runs.
"""
from __future__ import annotations

import json
import random
from typing import Dict, List, Optional, Tuple

from nader.compiler.mutate import MutationError
from nader.compiler.mutate.engine import apply_mutation, load_parent
from nader.compiler.mutate.table import OPERATORS
from nader.dsl.ir import Role

from ..candidate import Candidate
from ..objectives import best_of, dominates
from ..selection.uniform import select_uniform
from ..spaces import nb201
from ..tree import PENDING, REJECTED, TRIALS, TreeNode
from .base import StopSearch, Strategy
from .catalog import DECLARED


class LocalStrategy(Strategy):
    name = "local"
    summary, options = DECLARED[name]
    rootless = True  # --space nb201: no root trial by default (--root none)
    draws_pool = True  # --warm-start: climbs start at the pool's best, in rank order

    def __init__(self, **options):
        super().__init__(**options)
        self.anchor: Optional[int] = None  # the current architecture of the climb
        self.climbs = 0  # climbs started
        self.visited: set = set()
        self.keys: Dict[int, Optional[str]] = {}  # arch_id -> cell string (nb201)
        self.by_key: Dict[str, List[int]] = {}
        self.hoods: Dict[int, list] = {}  # anchor id -> [(key, make candidate)]
        self.mode: Tuple[str, int] = ("neighbour", 0)
        self.tree = None

    # ------------------------------------------------------------------ the climb
    def ask(self, tree, rng):
        self.tree = tree
        self._sync(tree)
        mode, arg = self._advance(tree)
        if mode == "wait":
            return None
        self.mode = (mode, arg)
        if mode == "neighbour":
            return tree[self.anchor]
        if self.space.uniform or self.pool_left(tree):  # a fresh start; it hangs under the root like random's
            return tree.root
        return select_uniform(tree, rng)

    def propose(self, parent, rng):
        self._sync(self.tree)
        mode, k = self.mode
        if mode == "start":
            if self.space.uniform or self.pool_left(self.tree):
                cand = self.draw(rng, self.tree, {key for key in self.keys.values() if key})
                if cand is None:
                    raise StopSearch("every architecture of the space is in the tree", code="exhausted")
            else:
                cand = self.space.mutate(parent, rng)
            cand.change = {**(cand.change or {}), "climb": k}
            return cand
        missing = [make for key, make in self._hood(parent) if self._resolve(parent, key) is None]
        if not missing:
            return None  # the whole neighbourhood is proposed
        return missing[rng.randrange(len(missing))]()

    def _advance(self, tree) -> Tuple[str, int]:
        """Follow the climb as far as the tree's results allow: ("neighbour", anchor) when the
        anchor has neighbours to propose, ("start", k) when climb k's start is to be drawn,
        ("wait", 0) while results are pending."""
        while True:
            if self.anchor is None and self.climbs == 0 and not self.space.uniform and not self._pooled():
                root = tree.root  # the block language has no uniform draw: the first climb starts here
                if root is None or root.status in PENDING:
                    return "wait", 0
                self.climbs, self.anchor = 1, root.arch_id
                self.visited.add(root.arch_id)
            if self.anchor is not None:
                anchor = tree[self.anchor]
                step = self._step(anchor)
                if step is not None:
                    return step
                best = self._best_neighbour(anchor)
                if best is not None and self._better(best, anchor) and best.arch_id not in self.visited:
                    self.anchor = best.arch_id
                    self.visited.add(best.arch_id)
                    continue
            # a local optimum (or a climb already followed, or a start without a result): next climb
            k = self.climbs + 1
            start = next((n for n in tree if n.change.get("climb") == k and n.status in TRIALS), None)
            if start is None:
                return "start", k
            if start.status in PENDING:
                return "wait", 0
            self.climbs, self.anchor = k, (start.arch_id if start.score is not None else None)
            self.visited.add(start.arch_id)

    def _pooled(self) -> bool:
        """Whether the run has a warm start's pool (its climbs start there, the first included)."""
        return self.context.proxies is not None and bool(self.context.proxies.pool)

    def _step(self, anchor: TreeNode) -> Optional[Tuple[str, int]]:
        """What the anchor's neighbourhood still needs: proposals, results, or nothing (None)."""
        pending = False
        for key, _make in self._hood(anchor):
            node = self._resolve(anchor, key)
            if node is None:
                return "neighbour", anchor.arch_id
            pending = pending or node.status in PENDING
        return ("wait", 0) if pending else None

    def _best_neighbour(self, anchor: TreeNode) -> Optional[TreeNode]:
        """The neighbour with the highest signal; ties go to the earlier evaluated. With several
        objectives: one of the neighbourhood's non-dominated set (`objectives.best_of`)."""
        scored = [n for n in (self._resolve(anchor, key) for key, _ in self._hood(anchor)) if n and n.score is not None]
        if self.several:
            return best_of(scored, self.objectives)
        return min(scored, key=lambda n: (-n.score, n.arch_id), default=None)

    def _better(self, node: TreeNode, anchor: TreeNode) -> bool:
        """A move needs a strictly higher signal; with several objectives, a neighbour that dominates."""
        if self.several:
            return dominates(node, anchor, self.objectives)
        return node.score > (anchor.score if anchor.score is not None else float("-inf"))

    # ------------------------------------------------------------------ neighbourhoods
    def _hood(self, anchor: TreeNode) -> list:
        if anchor.arch_id not in self.hoods:
            self.hoods[anchor.arch_id] = self._cells(anchor) if self.space.uniform else self._mutations(anchor)
        return self.hoods[anchor.arch_id]

    def _cells(self, anchor: TreeNode) -> list:
        key = self.keys.get(anchor.arch_id) or self.space.key(anchor)
        if key is None:
            return []
        out = []
        for cell, change in self.space.neighbours(nb201.CellStructure.parse(key)):
            out.append((str(cell), lambda cell=cell, change=change: Candidate(
                nb201.architecture(cell), operator="nb201-edge", change=change)))
        return out

    def _mutations(self, anchor: TreeNode) -> list:
        """Single mutations of the anchor: every operator's sites, shuffled per operator by the
        anchor's hash (the same neighbourhood on every run), taken round robin up to the bound."""
        if not anchor.text:
            return []
        try:
            _program, arch = load_parent(anchor.text)
        except MutationError:
            return []
        role = Role.CELL if arch.cells else Role.BASE
        shuffle = random.Random(f"local/{anchor.hash or anchor.text}")
        per_op = []
        for op in OPERATORS.values():
            sites = op.candidates(arch.base, role)
            shuffle.shuffle(sites)
            per_op.append(sites)
        picked = []
        while len(picked) < self.settings["neighbours"] and any(per_op):
            for sites in per_op:
                if sites and len(picked) < self.settings["neighbours"]:
                    picked.append(sites.pop(0))
        return [(json.dumps([s.operator, s.args], sort_keys=True, default=str),
                 lambda s=s, text=anchor.text: _apply(text, s)) for s in picked]

    def _resolve(self, anchor: TreeNode, key: str) -> Optional[TreeNode]:
        """The node holding a neighbour's result (None: not proposed yet). A duplicate stands for
        its original; a rejected neighbour is itself (resolved, without a score)."""
        if self.space.uniform:
            ids = self.by_key.get(key, ())
        else:
            ids = [k.arch_id for k in self.tree.kids(anchor.arch_id) if k.change.get("neighbour") == key]
        if not ids:
            return None
        nodes = [self.tree[i] for i in ids]
        tried = next((n for n in nodes if n.status not in REJECTED), None)
        if tried is not None:
            return tried
        first = nodes[0]
        if first.status == "duplicate" and first.duplicate_of is not None and first.duplicate_of in self.tree.nodes:
            return self.tree[first.duplicate_of]
        return first

    def _sync(self, tree) -> None:
        """Index new nodes by cell string (nb201)."""
        if not self.space.uniform:
            return
        for arch_id in sorted(set(tree.nodes) - set(self.keys)):
            key = self.keys[arch_id] = self.space.key(tree[arch_id])
            if key:
                self.by_key.setdefault(key, []).append(arch_id)


def _apply(text: str, site) -> Candidate:
    change = {"operator": site.operator, "args": site.args,
              "neighbour": json.dumps([site.operator, site.args], sort_keys=True, default=str)}
    try:
        m = apply_mutation(text, site.operator, dict(site.args))
    except MutationError as exc:  # CannotApply included
        return Candidate(None, operator=site.operator, change=change, error=str(exc))
    return Candidate(m.arch_text, operator=m.operator, change={**change, "args": m.args})
