"""`optuna`: Optuna's samplers (TPE, GP, CMA-ES, NSGA-II) over NAS-Bench-201's cell space, as a
thin adapter, so a search can be compared with the samplers NAS researchers already use.

A cell is six parameters, one per edge (``edge_1_0`` ... ``edge_3_2``, "node_source"), each a
categorical over the five operations; CMA-ES, which has no categorical distribution, gets each
edge as an integer index into NB201's operation order instead. Every decision is Optuna's: the
adapter asks its study for a trial, turns the parameters into the cell, and tells the study the
validation accuracy (the search's signal; maximised) of every finished trial; a failed trial is
in its history as failed. When the sampler proposes a cell already in the tree, that trial is told
failed and the proposal is a uniform draw among the cells left instead, so every trial is a new
cell. (Asking again, up to 100 times, made a converged TPE slow down from milliseconds to seconds a
trial between trials 200 and 300: every answer stayed in the study, 7,000 trials by trial 240.)

The study is a function of the tree, as the strategy interface asks: it holds every finished
architecture (in id order) as a trial with its parameters, result and the sampler's own
bookkeeping for it (Optuna's trial `system_attrs`: CMA-ES's optimizer state, NSGA-II's
generation, kept in the architecture's ``change["optuna"]``), and each proposal asks a sampler
seeded from the decision's rng. TPE's study is kept alive for the run and grown with the newly
finished architectures (TPE reads only complete trials, in order); the other samplers keep state
in their trials, so theirs is rebuilt for each proposal (about 10 ms per 100 trials, small next to
GP's model fit). So the same seed proposes the same cells, and a resumed run, whose study is
rebuilt once from the tree, proposes what the uninterrupted one did. With ``--warm-start`` the
pool's best ``startup`` cells are enqueued (`Study.enqueue_trial`) as the first trials.

It needs the optional package optuna (``pip install 'nader-toolchain[optuna]'``; CMA-ES also
``cmaes``, GP ``scipy``); a missing one is refused before the first trial.
"""
from __future__ import annotations

import functools
import importlib.util
import json
from typing import Dict, Optional

from nader.runtime.errors import ConfigError

from ..checks import arch_hash_of_text
from ..spaces import nb201
from ..candidate import Candidate
from ..tree import FINAL
from .base import StopSearch, Strategy
from .catalog import DECLARED

NEEDS = {"tpe": ("optuna",), "gp": ("optuna", "scipy"), "cmaes": ("optuna", "cmaes"), "nsga2": ("optuna",)}
REDRAWS = 1  # asks per proposal; a cell already in the tree then gives way to a uniform draw
REDRAWS_UNIFORM = 20  # uniform draws past cells whose graph is in the tree (one in three strings)


class OptunaStrategy(Strategy):
    name = "optuna"
    summary, options = DECLARED[name]
    rootless = True  # --space nb201: no root trial by default (--root none)
    draws_pool = True  # --warm-start: the pool's best are enqueued as the first trials

    def __init__(self, **options):
        super().__init__(**options)
        self.keys: Dict[int, Optional[str]] = {}  # arch_id -> cell string (None outside the space)
        self.tree = None
        self.cached = None  # TPE: ([arch ids added, in order], study), grown instead of rebuilt

    @classmethod
    def refuse_space(cls, space) -> Optional[str]:
        if getattr(space, "name", None) != "nb201":
            return (f"the optuna strategy searches NAS-Bench-201's cell space (one categorical per edge), not the "
                    f"{getattr(space, 'name', 'language')} space; add --space nb201")
        return None

    def bind(self, context) -> None:
        super().bind(context)
        missing = [m for m in NEEDS[self.settings["sampler"]] if importlib.util.find_spec(m) is None]
        if missing:
            raise ConfigError(f"--strategy optuna --option sampler={self.settings['sampler']} needs "
                              f"{' and '.join(missing)}; install it: pip install 'nader-toolchain[optuna]'")

    def ask(self, tree, rng):
        self.tree = tree
        return tree.root

    def propose(self, parent, rng):
        import optuna

        seen = {self._key(n) for n in self.tree} - {None}
        if len(seen) >= self.space.size:
            raise StopSearch("every architecture of the space is in the tree", code="exhausted")
        study, dists = self._study(rng.randrange(2**31))
        self._enqueue(study, seen)
        for _ in range(REDRAWS):
            trial = study.ask(dists)
            cell = self._cell(trial.params)
            if str(cell) not in seen and not self._isomorphic(cell):
                attrs = study._storage.get_trial(trial._trial_id).system_attrs
                return self._candidate(cell, attrs)
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        for _ in range(REDRAWS_UNIFORM):  # past a graph already tried too: the loop would ask the sampler again
            cand = self.space.sample(rng, seen)
            if cand is None or not self._isomorphic(nb201.CellStructure.parse(cand.change["cell"])):
                return cand
            seen.add(cand.change["cell"])
        return cand

    def _isomorphic(self, cell) -> bool:
        """Whether another string of the same graph is in the tree (the loop would record this one
        as a duplicate and ask again: a second ask of the sampler for one trial)."""
        return arch_hash_of_text(nb201.architecture(cell), self.space.skeleton) in self.tree.by_hash

    # ------------------------------------------------------------------ Optuna
    def _study(self, seed: int):
        """An in-memory study holding every finished architecture of the tree, and the distributions.

        TPE reads only complete trials, in the order added, so its study is kept and grown while
        the finished architectures come in id order (one worker): the redraws' failed trials and
        the proposals still running in it change nothing it computes. Other samplers keep state
        in their trials, so theirs is rebuilt each time."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        kind, dists = self.settings["sampler"], _distributions(self.settings["sampler"])
        finished = [n for n in self.tree if n.status in FINAL and self._key(n) is not None]
        ids = [n.arch_id for n in finished]
        if kind == "tpe" and self.cached is not None and ids[:len(self.cached[0])] == self.cached[0]:
            added, study = self.cached
            study.sampler = _tpe(seed, self.settings["startup"], dists)
            self._add(study, dists, finished[len(added):])
            self.cached = (ids, study)
            return study, dists
        if kind == "tpe":
            sampler = _tpe(seed, self.settings["startup"], dists)
        elif kind == "gp":
            sampler = optuna.samplers.GPSampler(seed=seed, n_startup_trials=self.settings["startup"])
        elif kind == "cmaes":
            sampler = optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
        else:
            sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=self.settings["population"])
        study = optuna.create_study(direction="maximize", sampler=sampler)
        self._add(study, dists, finished)
        if kind == "tpe":
            self.cached = (ids, study)
        return study, dists

    def _enqueue(self, study, seen: set) -> None:
        """With --warm-start: the pool's best `startup` cells not in the tree are enqueued (Optuna's
        `enqueue_trial`), so the sampler's first trials are the proxy's best, then its own."""
        proxies = self.context.proxies
        if proxies is None or not proxies.pool:
            return
        queued = getattr(study, "_nader_enqueued", set())
        for entry in proxies.pool[:self.settings["startup"]]:
            if entry.key not in seen and entry.key not in queued:
                study.enqueue_trial(self._params(entry.key))
                queued.add(entry.key)
        study._nader_enqueued = queued

    def _add(self, study, dists: dict, nodes) -> None:
        import optuna

        done = optuna.trial.TrialState
        for node in nodes:
            value = _value(node)
            study.add_trial(optuna.trial.create_trial(
                state=done.COMPLETE if value is not None else done.FAIL, value=value, distributions=dists,
                params=self._params(self._key(node)), system_attrs=dict((node.change or {}).get("optuna") or {})))

    def _cell(self, params: dict):
        return nb201.CellStructure(tuple(nb201.OPS[v] if isinstance(v, int) else v for v in (params[k] for k in _names())))

    def _params(self, key: str) -> dict:
        ops = nb201.CellStructure.parse(key).ops
        cmaes = self.settings["sampler"] == "cmaes"
        return {k: (nb201.OPS.index(op) if cmaes else op) for k, op in zip(_names(), ops)}

    def _key(self, node) -> Optional[str]:
        if node.arch_id not in self.keys:
            self.keys[node.arch_id] = self.space.key(node)
        return self.keys[node.arch_id]

    def _candidate(self, cell, attrs: dict) -> Candidate:
        operator = f"optuna-{self.settings['sampler']}"
        change = {"operator": operator, "cell": str(cell)}
        entry = self.context.proxies.entry(str(cell)) if self.context.proxies is not None else None
        if entry is not None and "fixed_params" in attrs:  # an enqueued trial: the warm start's
            change["warm_start"] = entry.candidate(self.context.proxies.spec).change["warm_start"]
        if attrs:
            change["optuna"] = json.loads(json.dumps(attrs, default=str))
        return Candidate(nb201.architecture(cell), origin="sample", operator=operator, change=change)


def _tpe(seed: int, startup: int, dists: dict):
    """TPE without the constant liar (Optuna 5's default): the study holds no running trial of
    another worker, only, when kept, proposals already answered by the tree. Its search space is
    the six edges, given: TPE would otherwise infer it each ask from every trial of the study
    (the intersection of their distributions), and a new sampler each proposal (for its seed)
    restarts that inference from the first trial: 83 ms an ask by trial 250, most of TPE's time."""
    return _fixed_space_tpe()(dists, seed=seed, n_startup_trials=startup, constant_liar=False)


@functools.lru_cache(maxsize=1)
def _fixed_space_tpe():
    import optuna

    class FixedSpaceTPE(optuna.samplers.TPESampler):
        def __init__(self, dists: dict, **options):
            super().__init__(**options)
            self._space = dict(dists)

        def infer_relative_search_space(self, study, trial):
            return dict(self._space)

    return FixedSpaceTPE


def _names() -> list:
    return [f"edge_{node}_{source}" for node, source in nb201.EDGES]


def _distributions(kind: str) -> dict:
    from optuna.distributions import CategoricalDistribution, IntDistribution


    return {name: (IntDistribution(0, len(nb201.OPS) - 1) if kind == "cmaes" else CategoricalDistribution(nb201.OPS))
            for name in _names()}


def _value(node) -> Optional[float]:
    """What the study maximises: the validation accuracy of a trained (or diverged) node, or of a
    pruned one at the step it stopped (as a lower rung's)."""
    return node.valid_acc if node.status in ("ok", "pruned", "diverged") else None
