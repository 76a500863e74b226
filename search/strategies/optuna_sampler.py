"""`optuna`: Optuna's samplers (TPE, GP, CMA-ES, NSGA-II) over NAS-Bench-201's cell space, as a
thin adapter, so a search can be compared with the samplers NAS researchers already use.

A cell is six parameters, one per edge (``edge_1_0`` ... ``edge_3_2``, "node_source"), each a
categorical over the five operations; CMA-ES, which has no categorical distribution, gets each
edge as an integer index into NB201's operation order instead. Every decision is Optuna's: the
adapter asks its study for a trial, turns the parameters into the cell, and tells the study the
validation accuracy (the search's signal; maximised) of every finished trial; a failed trial is
in its history as failed. A cell already in the tree is asked again (after 100 in a row a uniform
draw among the cells left is taken instead), so every trial is a new cell.

The study is a function of the tree, as the strategy interface asks: each proposal opens an
in-memory study, adds every finished architecture (in id order) as a trial with its parameters,
result and the sampler's own bookkeeping for it (Optuna's trial `system_attrs`: CMA-ES's
optimizer state, NSGA-II's generation, kept in the architecture's ``change["optuna"]``), and asks
a sampler seeded from the decision's rng. So the same seed proposes the same cells, and a resumed
run proposes what the uninterrupted one did. Rebuilding costs time linear in the trials per
proposal (about 10 ms per 100 trials), small next to TPE's or GP's own model fits.

It needs the optional package optuna (``pip install 'nader-toolchain[optuna]'``; CMA-ES also
``cmaes``, GP ``scipy``); a missing one is refused before the first trial.
"""
from __future__ import annotations

import importlib.util
import json
from typing import Dict, Optional

from nader.runtime.errors import ConfigError

from ..spaces import nb201
from ..candidate import Candidate
from ..tree import FINAL
from .base import StopSearch, Strategy
from .catalog import DECLARED

NEEDS = {"tpe": ("optuna",), "gp": ("optuna", "scipy"), "cmaes": ("optuna", "cmaes"), "nsga2": ("optuna",)}
REDRAWS = 100  # cells already in the tree answered in a row before a uniform draw


class OptunaStrategy(Strategy):
    name = "optuna"
    summary, options = DECLARED[name]
    rootless = True  # --space nb201: no root trial by default (--root none)

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
        for _ in range(REDRAWS):
            trial = study.ask(dists)
            cell = self._cell(trial.params)
            if str(cell) not in seen:
                attrs = study._storage.get_trial(trial._trial_id).system_attrs
                return self._candidate(cell, attrs)
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        return self.space.sample(rng, seen)

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
            study.sampler = _tpe(seed, self.settings["startup"])
            self._add(study, dists, finished[len(added):])
            self.cached = (ids, study)
            return study, dists
        if kind == "tpe":
            sampler = _tpe(seed, self.settings["startup"])
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
        if attrs:
            change["optuna"] = json.loads(json.dumps(attrs, default=str))
        return Candidate(nb201.architecture(cell), origin="sample", operator=operator, change=change)


def _tpe(seed: int, startup: int):
    """TPE without the constant liar (Optuna 5's default): the study holds no running trial of
    another worker, only, when kept, proposals already answered by the tree."""
    import optuna

    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, constant_liar=False)


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
