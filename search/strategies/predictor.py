"""`predictor`: a predictor-guided search (BANANAS-style), in a trust region around the best.

Each proposal after the first ``initial`` trials:

1. **Data**: every architecture told so far with its result. Its target is the validation
   accuracy; with several objectives (`--objective`), ParEGO's scalarisation (Knowles 2006): each
   objective normalised to [0, 1] over the architectures told, combined by an augmented
   Chebyshev sum with weights drawn afresh for each proposal, so that successive proposals aim
   at different parts of the Pareto front.
2. **Features**: the architecture's encoding (`nader.search.encodings`: the one-hot adjacency
   encoding of a NAS-Bench-201 cell; a bag of operations and operation pairs of a block) and
   each proxy's rank (`--proxy`, through `SearchContext.proxies`: the fraction of the warm
   start's pool that scores no higher, or of the architectures at hand without a pool).
3. **Model** (``model``): scikit-learn's `Ridge` (``ridge``, penalty ``alpha``: a linear model
   with no spread, the default), a bagged ensemble of ridge regressions (``ensemble``: the mean
   and spread of 10 bootstrap fits), `BayesianRidge` (``bayes``: its regularisation fitted to the
   data, with a predictive standard deviation), or a Gaussian process (``gp``: RBF kernel plus
   noise, hyper-parameters fitted).
4. **Candidates**: mutations of the incumbent (the best architecture told) within the trust
   region, and the warm start's best architectures not tried yet. In the cell space the
   trust region is every cell within ``radius`` edges of the incumbent (radius 2: 264 cells),
   widened by one edge at a time when none of it is left; in the block language it is
   ``candidates`` chains of one to ``radius`` random mutations of the incumbent.
5. **Acquisition** (``acquisition``): the mean (``mean``, the default), expected improvement over
   the best target (``ei``) or the upper confidence bound mean + one standard deviation
   (``ucb``); ties go to the higher proxy rank. The candidate with the highest value is
   proposed. The trust region does the exploring, so the mean is enough: on the development
   tables the ridge's mean found the best cell sooner than EI on any model (benchmarks/README.md).

The first ``initial`` trials are the warm start's pool, best first (`--warm-start`), or uniform
draws (cell space) or mutations of the root (block language) without one. Isomorphic cells share
a canonical hash, and a candidate whose graph is in the tree is left out.

Nothing about any benchmark is built in: the model starts empty on every run, its only inputs
are the architectures' encodings, the proxies computed on their networks and the results its own
queries returned. The defaults were chosen on the two development tables (benchmarks/README.md,
`strategies.py --dev`, with the sensitivity to each option).

State: none between calls. Each proposal refits the model on the tree's results, and its random
draws (the ensemble's bootstraps, ParEGO's weights, the block language's mutations) come from the
decision's rng, so a resumed run proposes what the uninterrupted one did.
"""
from __future__ import annotations

import bisect
import importlib.util
import itertools
import math
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from nader.runtime.errors import ConfigError

from ..candidate import Candidate
from ..checks import arch_hash_of_text
from ..encodings import block_bag, cell_vector
from ..objectives import value
from ..proxies import score_ranks
from ..spaces import nb201
from ..tree import PENDING, TreeNode
from ..warm_start import arch_hash_of_cell
from .base import StopSearch, Strategy
from .catalog import DECLARED

ENSEMBLE = 10  # bootstrap fits of `ensemble`
UCB_BETA = 1.0  # `ucb`: mean + this many standard deviations
POOL_CANDIDATES = 5  # the warm start's best untried architectures among the candidates
PAREGO_RHO = 0.05  # the augmented Chebyshev sum's linear part (Knowles 2006)
MUTATION_TRIES = 3  # block language: mutation draws per wanted candidate


class PredictorStrategy(Strategy):
    name = "predictor"
    summary, options = DECLARED[name]
    rootless = True  # --space nb201: no root trial by default (--root none)
    draws_pool = True  # --warm-start: the initial trials are the pool's best
    uses_proxies = True  # the proxies are features: scored whether or not a warm start asks for them

    def __init__(self, **options):
        super().__init__(**options)
        self.tree = None
        self.phase = "initial"
        self._keys: Dict[int, Optional[str]] = {}  # arch_id -> cell string (cell space)
        self._pool_index = None  # hash -> pool member, and the pool's sorted scores per proxy
        self._data: tuple = ([], [])  # this decision's (architectures told, targets)

    def bind(self, context) -> None:
        super().bind(context)
        if importlib.util.find_spec("sklearn") is None:
            raise ConfigError("--strategy predictor fits its model with scikit-learn; install it: "
                              "pip install 'nader-toolchain[data]'")
        if self.settings["model"] == "ridge" and self.settings["acquisition"] != "mean":
            raise ConfigError(f"--option acquisition={self.settings['acquisition']} weighs the model's spread, and "
                              "a single ridge has none: use --option model=ensemble (or bayes, gp), or "
                              "acquisition=mean")

    # ------------------------------------------------------------------ the loop's calls
    def ask(self, tree, rng):
        self.tree = tree
        seen = self._seen()
        if self.space.uniform and len(seen) >= self.space.size:
            raise StopSearch("every architecture of the space is in the tree", code="exhausted")
        told = self._told()
        if tree.trials() < self.settings["initial"] or len(told) < 2:
            if tree.trials() >= self.settings["initial"] and any(n.status in PENDING for n in tree):
                return None  # too few results to fit: wait for the ones training
            self.phase = "initial"
            return tree.root
        self.phase = "model"
        self._data = (told, self._targets(told, rng))  # ParEGO's weights: one draw per decision
        return max(zip(*self._data), key=lambda p: (p[1], -p[0].arch_id))[0]  # the incumbent

    def propose(self, parent, rng):
        if self.phase == "initial":
            return self._initial(parent, rng)
        told, targets = self._data
        candidates = self._candidates(parent, rng)
        if not candidates:
            return self._initial(parent, rng)
        features = self._features([n.text for n in told], [self._key(n) for n in told],
                                  [c[1] for c in candidates], [c[0] for c in candidates])
        train, test, proxy = features
        mu, sd = self._predict(train, targets, test, rng)
        score = self._acquire(mu, sd, max(targets))
        best = max(range(len(candidates)), key=lambda i: (score[i], proxy[i], -i))
        key, text, make, distance = candidates[best]
        note = {"model": self.settings["model"], "acquisition": self.settings["acquisition"],
                "predicted": round(float(mu[best]), 4), "std": round(float(sd[best]), 4),
                "value": round(float(score[best]), 4), "candidates": len(candidates), "distance": distance,
                "trained_on": len(told)}
        cand = make()
        cand.change = {**(cand.change or {}), "predictor": note}
        return cand

    # ------------------------------------------------------------------ what the tree holds
    def _key(self, node: TreeNode) -> Optional[str]:
        if not self.space.uniform:
            return None
        if node.arch_id not in self._keys:
            self._keys[node.arch_id] = self.space.key(node)
        return self._keys[node.arch_id]

    def _seen(self) -> set:
        return {k for k in (self._key(n) for n in self.tree) if k}

    def _told(self) -> List[TreeNode]:
        """The architectures with every objective's value (trained ok), in id order."""
        return [n for n in self.tree if n.status == "ok" and n.text
                and all(value(n, o.name) is not None for o in self.objectives)
                and (not self.space.uniform or self._key(n) is not None)]

    def _targets(self, told: Sequence[TreeNode], rng) -> List[float]:
        """What the model predicts, higher better: the objective's value, or ParEGO's scalarisation."""
        objectives = self.objectives
        losses = [[o.loss(value(n, o.name)) for o in objectives] for n in told]
        if len(objectives) == 1:
            return [-row[0] for row in losses]
        lo = [min(col) for col in zip(*losses)]
        hi = [max(col) for col in zip(*losses)]
        weights = [-math.log(1.0 - rng.random()) for _ in objectives]  # a uniform point of the simplex
        total = sum(weights)
        weights = [w / total for w in weights]
        out = []
        for row in losses:
            scaled = [(v - a) / (b - a) if b > a else 0.0 for v, a, b in zip(row, lo, hi)]
            weighted = [w * s for w, s in zip(weights, scaled)]
            out.append(-(max(weighted) + PAREGO_RHO * sum(weighted)))
        return out

    # ------------------------------------------------------------------ proposals
    def _initial(self, parent, rng) -> Optional[Candidate]:
        """The pool's best untried architecture, else a uniform draw (cell space) or a mutation of the root."""
        if self.space.uniform or self.pool_left(self.tree):
            cand = self.draw(rng, self.tree, self._seen())
            if cand is None:
                raise StopSearch("every architecture of the space is in the tree", code="exhausted")
            return cand
        return self.space.mutate(self.tree.root if parent is None else parent, rng)

    def _candidates(self, incumbent: TreeNode, rng) -> List[tuple]:
        """(key, text, make the Candidate, distance) of the untried architectures the acquisition picks among."""
        out = self._cells(incumbent) if self.space.uniform else self._mutations(incumbent, rng)
        taken = {c[1] for c in out}
        proxies, seen = self.context.proxies, self._seen()
        if proxies is not None:
            want = len(out) + POOL_CANDIDATES
            for entry in proxies.pool:
                if len(out) >= want:
                    break
                if entry.hash in self.tree.by_hash or entry.text in taken or (entry.key and entry.key in seen):
                    continue
                taken.add(entry.text)
                out.append((entry.key, entry.text, lambda e=entry: e.candidate(proxies.spec), None))
        return out

    def _cells(self, incumbent: TreeNode) -> List[tuple]:
        """Every untried cell within the trust region's radius of the incumbent (widened while empty)."""
        center = self._key(incumbent)
        if center is None:
            return []
        ops = nb201.CellStructure.parse(center).ops
        seen = self._seen()
        for radius in range(self.settings["radius"], len(nb201.EDGES) + 1):
            out = []
            for other in _ball(ops, radius):
                key = str(nb201.CellStructure(other))
                if key in seen:
                    continue
                text = nb201.architecture(nb201.CellStructure(other))
                if self._hash(key) in self.tree.by_hash:
                    continue  # another string of a graph already tried
                distance = sum(a != b for a, b in zip(ops, other))
                out.append((key, text, lambda k=key, t=text, d=distance: Candidate(
                    t, origin="predictor", operator="predictor",
                    change={"operator": "predictor", "cell": k, "from": center, "radius": radius}), distance))
            if out:
                return out
        return []

    def _mutations(self, incumbent: TreeNode, rng) -> List[tuple]:
        """Chains of one to `radius` random mutations of the incumbent, distinct and not in the tree."""
        out, texts = [], set()
        want = self.settings["candidates"]
        for i in range(MUTATION_TRIES * want):
            if len(out) >= want:
                break
            node, cand = incumbent, None
            for step in range(1 + i % self.settings["radius"]):
                cand = self.space.mutate(node, rng)
                if cand.text is None:
                    break
                node = TreeNode(arch_id=-1, parent_id=None, depth=0, status="ok", text=cand.text)
            if cand is None or cand.text is None or cand.text in texts:
                continue
            arch_hash = arch_hash_of_text(cand.text, self.context.skeleton)
            if arch_hash is None or arch_hash in self.tree.by_hash:
                continue
            texts.add(cand.text)
            out.append((None, cand.text, lambda c=cand: c, step + 1))
        return out

    def _hash(self, key: str) -> Optional[str]:
        return arch_hash_of_cell(key, self.space.skeleton)

    # ------------------------------------------------------------------ features
    def _features(self, train_texts, train_keys, test_texts, test_keys):
        """(training matrix, candidates' matrix, candidates' mean proxy rank): the encoding and each proxy's rank."""
        import numpy as np

        texts, keys = list(train_texts) + list(test_texts), list(train_keys) + list(test_keys)
        if self.space.uniform:
            encoded = np.array([cell_vector(k) for k in keys])
        else:
            from sklearn.feature_extraction import DictVectorizer

            encoded = DictVectorizer(sparse=False, sort=True).fit_transform([block_bag(t) for t in texts])
        ranks = self._proxy_ranks(texts, keys)
        matrix = np.hstack([encoded, ranks]) if ranks.size else encoded
        n = len(train_texts)
        mean_rank = ranks[n:].mean(axis=1) if ranks.size else np.zeros(len(test_texts))
        return matrix[:n], matrix[n:], list(mean_rank)

    def _proxy_ranks(self, texts, keys):
        """Each proxy's rank of each architecture in [0, 1] (1: the best), against the warm start's
        pool when there is one, else against these architectures; an empty matrix without proxies."""
        import numpy as np

        proxies = self.context.proxies
        if proxies is None:
            return np.zeros((len(texts), 0))
        scores = [self._scores(t, k) for t, k in zip(texts, keys)]
        members = list(scores[0]) if scores else []
        pool = self._pool()
        columns = []
        for m in members:
            values = [s.get(m) for s in scores]
            if pool is not None and m in pool[1]:
                ref = pool[1][m]
                columns.append([bisect.bisect_right(ref, v) / len(ref) if v is not None else 0.0 for v in values])
            else:
                r = score_ranks(values)  # 1: the best
                columns.append([1.0 - (x - 1) / len(values) for x in r])
        return np.array(columns, dtype=float).T if columns else np.zeros((len(texts), 0))

    def _pool(self):
        """(hash -> pool member, proxy -> the pool's sorted scores), or None without a pool."""
        proxies = self.context.proxies
        if proxies is None or len(proxies.pool) < 2:
            return None
        if self._pool_index is None or self._pool_index[2] != len(proxies.pool):
            by_hash = {e.hash: e for e in proxies.pool}
            sorted_scores = {m: sorted(e.scores[m] for e in proxies.pool if e.scores.get(m) is not None)
                             for m in proxies.pool[0].scores}
            self._pool_index = (by_hash, {m: s for m, s in sorted_scores.items() if s}, len(proxies.pool))
        return self._pool_index

    def _scores(self, text: str, key: Optional[str]) -> Dict[str, Optional[float]]:
        proxies = self.context.proxies
        entry = proxies.entry(key) if key else None
        if entry is None and key is not None:
            pool = self._pool()
            entry = pool[0].get(self._hash(key)) if pool is not None else None
        if entry is not None:
            return entry.scores
        return proxies.scores(text, self._hash(key) if key else None)

    # ------------------------------------------------------------------ model and acquisition
    def _predict(self, train, targets, test, rng) -> Tuple[list, list]:
        """The model's mean and standard deviation on the candidates, in the targets' units."""
        import numpy as np

        y = np.asarray(targets, dtype=float)
        mean, std = float(y.mean()), float(y.std()) or 1.0
        z = (y - mean) / std
        kind = self.settings["model"]
        if kind == "ridge":
            from sklearn.linear_model import Ridge

            mu = Ridge(alpha=self.settings["alpha"]).fit(train, z).predict(test)
            sd = np.zeros_like(mu)
        elif kind == "bayes":
            from sklearn.linear_model import BayesianRidge

            mu, sd = BayesianRidge().fit(train, z).predict(test, return_std=True)
        elif kind == "ensemble":
            from sklearn.ensemble import BaggingRegressor
            from sklearn.linear_model import Ridge

            bag = BaggingRegressor(Ridge(alpha=self.settings["alpha"]), n_estimators=ENSEMBLE,
                                   random_state=rng.randrange(2**31))
            bag.fit(train, z)
            each = np.array([e.predict(test[:, f]) for e, f in zip(bag.estimators_, bag.estimators_features_)])
            mu, sd = each.mean(axis=0), each.std(axis=0)
        else:
            from sklearn.gaussian_process import GaussianProcessRegressor
            from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

            from sklearn.exceptions import ConvergenceWarning

            kernel = ConstantKernel(1.0) * RBF(length_scale=3.0) + WhiteKernel(0.1)
            gp = GaussianProcessRegressor(kernel, random_state=rng.randrange(2**31))
            with warnings.catch_warnings():  # a hyper-parameter at its bound is no news for the user
                warnings.simplefilter("ignore", ConvergenceWarning)
                gp.fit(train, z)
            mu, sd = gp.predict(test, return_std=True)
        return mu * std + mean, sd * std

    def _acquire(self, mu, sd, best: float) -> list:
        import numpy as np
        from scipy.stats import norm

        kind = self.settings["acquisition"]
        mu, sd = np.asarray(mu, dtype=float), np.asarray(sd, dtype=float)
        if kind == "mean":
            return list(mu)
        if kind == "ucb":
            return list(mu + UCB_BETA * sd)
        gain = mu - best
        safe = np.where(sd > 1e-12, sd, 1.0)
        z = gain / safe
        ei = np.where(sd > 1e-12, gain * norm.cdf(z) + sd * norm.pdf(z), np.maximum(gain, 0.0))
        return list(ei)


def _ball(ops: Tuple[str, ...], radius: int):
    """The operation tuples at 1 to `radius` edges from `ops`, nearer ones first, in a fixed order."""
    n = len(ops)
    for d in range(1, radius + 1):
        for edges in itertools.combinations(range(n), d):
            choices = [[o for o in nb201.OPS if o != ops[e]] for e in edges]
            for picked in itertools.product(*choices):
                out = list(ops)
                for e, o in zip(edges, picked):
                    out[e] = o
                yield tuple(out)


__all__ = ["PredictorStrategy"]
