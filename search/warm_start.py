"""The run's training-free proxies, as strategies see them: the zero-cost warm start's ranked pool
(`--warm-start N --proxy P`) and scores on demand (`SearchContext.proxies`).

Before the first query the warm start scores a pool of architectures with the proxy and ranks it
(an ensemble by the mean of its members' ranks; Abdelfattah et al. 2021's zero-cost warm start):

* in a finite space (`--space nb201`): N cells drawn uniformly without replacement from the
  run's seed, or every cell when N is at least the space's size (`--warm-start all`); isomorphic
  cells (one canonical hash) are one architecture, the first drawn;
* in the block language: N distinct valid mutations of the root (each checked as a proposal is:
  verified, deduplicated, fitted to the budget), drawn from the run's seed.

Strategies start from the best: `Strategy.draw` hands out the pool best first (random's order,
REA's first population, local search's climb starts, Optuna's enqueued trials), and the loop
gives any other strategy the pool's best as its first trial. Scoring is no query: only
architectures trained or looked up count as trials. Every score is cached by canonical hash in
the run's store (and in a shared ``--proxy-cache`` file), so a resumed run draws the same pool
and recomputes nothing; `stats` says what this session computed and what it read.
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .candidate import Candidate
from .checks import Checker, arch_hash_of_text
from .proxy_scorer import ProxyScorer
from .spaces import nb201
from .spaces.space import all_strings
from .store import ProxyCache
from .tree import Tree, TreeNode

ALL = "all"
TRIES = 4  # mutations drawn per pool member wanted (block language): rejected ones are not members


@dataclass(frozen=True)
class Scored:
    """One architecture of the pool: its rank (1: best), hash, text and how it was made."""

    rank: int
    hash: str
    text: str
    key: Optional[str]  # the space's key (a cell string), None in the block language
    scores: Dict[str, Optional[float]]  # each member proxy's score
    operator: Optional[str] = None
    change: dict = field(default_factory=dict)

    def candidate(self, spec: str) -> Candidate:
        """The pool member as a proposal; its change records the warm start's rank and scores."""
        warm = {"proxy": spec, "rank": self.rank, "scores": self.scores}
        return Candidate(self.text, origin="warm-start", operator=self.operator,
                         change={**self.change, "warm_start": warm})


class Proxies:
    """The run's proxy (`--proxy`): a scorer over the run's caches, and the warm start's pool."""

    def __init__(self, config, store=None):
        """`store`: the run's SearchStore, whose proxy cache is read and filled (None: no cache but
        `--proxy-cache`'s file, if any)."""
        self.config, self.store = config, store
        self.spec = config.proxy
        self._shared = None
        self.size = config.warm_start  # None/0: no warm start; an int or "all"
        self.pool: List[Scored] = []
        self.prepared = False
        self._scorer: Optional[ProxyScorer] = None
        self._cursor = 0
        self._hashes: set = set()  # every hash in the tree, whatever its status
        self._read = -1  # the highest arch id read into _hashes
        self._by_key: Dict[str, Scored] = {}

    @property
    def scorer(self) -> ProxyScorer:
        if self._scorer is None:
            c = self.config
            caches = [self.store.proxy_cache()] if self.store is not None else []
            if c.proxy_cache:
                self._shared = ProxyCache.open(c.proxy_cache)
                caches.append(self._shared)
            self._scorer = ProxyScorer(c.proxy, skeleton=c.skeleton, dataset=c.dataset, data_dir=c.data_dir,
                                       caches=caches)
        return self._scorer

    def close(self) -> None:
        """Close the shared cache file, if one was opened."""
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    # ------------------------------------------------------------------ on demand
    def scores(self, text: str, arch_hash: Optional[str] = None) -> Dict[str, Optional[float]]:
        """Each member proxy's score of one architecture (cached by canonical hash): a feature a
        predictor may read. An architecture the skeleton cannot load scores None."""
        arch_hash = arch_hash or arch_hash_of_text(text, self.config.skeleton)
        if arch_hash is None:
            return {name: None for name in self.scorer.members}
        got = self.scorer.scores([(arch_hash, text)])
        return {name: values[0] for name, values in got.items()}

    def stats(self) -> dict:
        """What this session's scorer did: scores computed (and their seconds), scores read from a cache."""
        s = self._scorer
        return {"proxy": self.spec, "pool": len(self.pool), "computed": s.evaluated if s else 0,
                "seconds": round(s.seconds, 3) if s else 0.0, "reused": s.reused if s else 0}

    # ------------------------------------------------------------------ the warm start
    def prepare(self, loop) -> None:
        """Score and rank the pool (once, before the first query)."""
        if self.prepared or not self.size:
            self.prepared = True
            return
        self.prepared = True
        rng = random.Random(f"nader-search/{self.config.seed}/warm-start")
        space = loop.space
        members = _cells(space, self.size, rng) if space.uniform else _mutations(loop, int(self.size), rng)
        unique: Dict[str, tuple] = {}
        for h, text, key, operator, change in members:
            if h is not None and h not in unique:
                unique[h] = (text, key, operator, change)
        items = [(h, v[0]) for h, v in unique.items()]
        if not items:
            return
        ranked, scores = self.scorer.order(items)
        pool = []
        for rank, i in enumerate(ranked, 1):
            h = items[i][0]
            text, key, operator, change = unique[h]
            pool.append(Scored(rank, h, text, key, {n: s[i] for n, s in scores.items()}, operator, change))
        self.pool = pool
        self._by_key = {e.key: e for e in pool if e.key is not None}

    def entry(self, key: str) -> Optional[Scored]:
        """The pool member of a space key (a cell string), or None."""
        return self._by_key.get(key)

    def next_unseen(self, tree, seen=()) -> Optional[Scored]:
        """The best pool member whose key is not in `seen` and whose hash is in no node of the tree
        (a function of the tree: a resumed run hands out what the uninterrupted one would)."""
        for arch_id in sorted(a for a in tree.nodes if a > self._read):
            self._hashes.add(tree.nodes[arch_id].hash)
            self._read = arch_id
        while self._cursor < len(self.pool):
            entry = self.pool[self._cursor]
            if (entry.key is not None and entry.key in seen) or entry.hash in self._hashes:
                self._cursor += 1  # once in the tree, always in the tree
                continue
            return entry
        return None


@functools.lru_cache(maxsize=None)  # bounded by the space (15,625 strings): runs in one process hash each once
def arch_hash_of_cell(key: str, skeleton: str) -> Optional[str]:
    """The canonical hash of a cell string's whole architecture (`nadc hash`, as the tree holds it; None
    when it does not load)."""
    return arch_hash_of_text(nb201.architecture(nb201.CellStructure.parse(key)), skeleton)


def _cells(space, size, rng: random.Random) -> list:
    """N cells drawn uniformly without replacement (every cell when N reaches the space's size)."""
    strings = all_strings()
    chosen = list(strings) if size == ALL or int(size) >= len(strings) else rng.sample(strings, int(size))
    out = []
    for s in chosen:
        text = nb201.architecture(nb201.CellStructure.parse(s))
        out.append((arch_hash_of_cell(s, space.skeleton), text, s, "nb201-uniform", {"operator": "nb201-uniform", "cell": s}))
    return out


def _mutations(loop, size: int, rng: random.Random) -> list:
    """N distinct mutations of the root that pass the checks (verified, not in the tree, fitted)."""
    c = loop.checker
    checker = Checker(c.skeleton, c.dataset, c.depths, c.budget, space=c.space)  # its own: ids are scratch ones
    seen = Tree(list(loop.tree))  # a scratch tree: the pool is not recorded
    out = []
    for _ in range(TRIES * size):
        if len(out) >= size:
            break
        cand = loop.space.mutate(loop.tree.root, rng)
        if cand.text is None:
            continue
        checked = checker.check(cand.text, seen)
        if not checked.ok:
            continue
        seen.add(TreeNode(arch_id=seen.next_id, parent_id=0, depth=1, status="proposed", text=cand.text,
                      hash=checked.hash))
        out.append((checked.hash, cand.text, None, cand.operator, cand.change or {}))
    return out


__all__ = ["ALL", "Proxies", "Scored", "arch_hash_of_cell"]
