"""`optuna`: Optuna's samplers (TPE, GP, CMA-ES, NSGA-II) over NAS-Bench-201's cell space, as a
thin adapter, so a search can be compared with the samplers NAS researchers already use.

A cell is six parameters, one per edge (``edge_1_0`` ... ``edge_3_2``, "node_source"), each a
categorical over the five operations; CMA-ES, which has no categorical distribution, gets each
edge as an integer index into NB201's operation order instead. Every decision is Optuna's: the
adapter asks its study for a trial, turns the parameters into the cell, and tells the study the
validation accuracy (the search's signal; maximised) when the trial finishes; a failed trial is
told as failed. A cell already in the tree is told its known result at once and Optuna is asked
again (after 100 such answers in a row a uniform draw among the cells left is taken instead), so
every trial is a new cell. A candidate the loop refused as an isomorphic duplicate is told its
original's result.

The study lives in memory. On a resume the loop tells every finished node again, and the adapter
adds each to a fresh study as a completed trial, so the sampler sees the same history; the
sampler is seeded from the first decision's rng, so a resumed run draws from the same history
but not necessarily what the uninterrupted run would have drawn.

It needs the optional package optuna (``pip install 'nader-toolchain[optuna]'``; CMA-ES also
``cmaes``, GP ``scipy``); a missing one is refused before the first trial.
"""
from __future__ import annotations

import importlib.util
from typing import Dict, Optional

from nader.runtime.errors import ConfigError

from .base import Candidate, Option, StopSearch, Strategy

SAMPLERS = ("tpe", "gp", "cmaes", "nsga2")
NEEDS = {"tpe": ("optuna",), "gp": ("optuna", "scipy"), "cmaes": ("optuna", "cmaes"), "nsga2": ("optuna",)}
REDRAWS = 100  # cells already in the tree answered in a row before a uniform draw


class OptunaStrategy(Strategy):
    name = "optuna"
    summary = "Optuna's samplers (tpe, gp, cmaes, nsga2) over the cell space, one categorical per edge (--space nb201)"
    options = {
        "sampler": Option(str, "tpe", "which Optuna sampler", choices=SAMPLERS),
        "startup": Option(int, 10, "tpe, gp: random trials before the model is used (n_startup_trials)", minimum=1),
        "population": Option(int, 20, "nsga2: population size", minimum=2),
    }
    rootless = True  # --space nb201: no root trial by default (--root none)

    def __init__(self, **options):
        super().__init__(**options)
        self.study = None
        self.dists: Dict[str, object] = {}
        self.pending: Dict[str, int] = {}  # cell string -> number of the Optuna trial that proposed it
        self.added: set = set()  # arch ids whose result the study has
        self.keys: Dict[int, Optional[str]] = {}
        self.told: Dict[int, object] = {}  # arch id -> finished node, in the order told
        self.tree = None

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

    # ------------------------------------------------------------------ Optuna
    def _open(self, rng) -> None:
        import optuna
        from optuna.distributions import CategoricalDistribution, IntDistribution

        from ..spaces import nb201

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        kind, seed = self.settings["sampler"], rng.randrange(2**31)
        for node, source in nb201.EDGES:
            self.dists[f"edge_{node}_{source}"] = (IntDistribution(0, len(nb201.OPS) - 1) if kind == "cmaes"
                                                  else CategoricalDistribution(nb201.OPS))
        if kind == "tpe":
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=self.settings["startup"])
        elif kind == "gp":
            sampler = optuna.samplers.GPSampler(seed=seed, n_startup_trials=self.settings["startup"])
        elif kind == "cmaes":
            sampler = optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
        else:
            sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=self.settings["population"])
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        for node in self.told.values():
            self._add(node)

    def _cell(self, params: dict):
        from ..spaces import nb201

        ops = tuple(nb201.OPS[v] if isinstance(v, int) else v for v in (params[k] for k in self.dists))
        return nb201.Cell(ops)

    def _params(self, cell) -> dict:
        from ..spaces import nb201

        return {k: (nb201.OPS.index(op) if self.settings["sampler"] == "cmaes" else op)
                for k, op in zip(self.dists, cell.ops)}

    def _add(self, node) -> None:
        """A finished node the study did not ask for (a resume's history) as a completed trial."""
        import optuna

        key = self._key(node)
        if key is None or node.arch_id in self.added:
            return
        from ..spaces import nb201

        value = _value(node)
        state = optuna.trial.TrialState.COMPLETE if value is not None else optuna.trial.TrialState.FAIL
        self.study.add_trial(optuna.trial.create_trial(state=state, value=value, distributions=self.dists,
                                                       params=self._params(nb201.Cell.parse(key))))
        self.added.add(node.arch_id)

    def _finish(self, number: int, value: Optional[float]) -> None:
        import optuna

        if value is None:
            self.study.tell(number, state=optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(number, value)

    def _key(self, node) -> Optional[str]:
        if node.arch_id not in self.keys:
            self.keys[node.arch_id] = self.space.key(node)
        return self.keys[node.arch_id]

    # ------------------------------------------------------------------ the strategy
    def tell(self, node, rng):
        self.told[node.arch_id] = node
        if self.study is None:
            return  # replayed history: added when the study opens
        value = _value(node)
        number = self.pending.pop(self._key(node) or "", None)
        if number is None:
            self._add(node)
        else:
            self._finish(number, value)
            self.added.add(node.arch_id)

    def ask(self, tree, rng):
        self.tree = tree
        if self.study is None:
            self._open(rng)
        self._settle(tree)
        return tree.root

    def _settle(self, tree) -> None:
        """Candidates the loop refused (an isomorphic duplicate, over budget) get an answer."""
        for node in tree:
            if node.status in ("duplicate", "invalid", "over-budget"):
                number = self.pending.pop(self._key(node) or "", None)
                if number is not None:
                    original = tree.nodes.get(node.duplicate_of) if node.duplicate_of is not None else None
                    self._finish(number, _value(original) if original is not None else None)

    def propose(self, parent, rng):
        seen = {self._key(n) for n in self.tree} - {None}
        if len(seen) >= self.space.size:
            raise StopSearch("every architecture of the space is in the tree", code="exhausted")
        by_key = {self._key(n): n for n in self.tree if self._key(n)}
        for _ in range(REDRAWS):
            trial = self.study.ask(self.dists)
            cell = self._cell(trial.params)
            key = str(cell)
            if key not in by_key:
                self.pending[key] = trial.number
                return self._candidate(cell)
            known = by_key[key]
            self._finish(trial.number, _value(known))
        return self.space.sample(rng, seen)

    def _candidate(self, cell) -> Candidate:
        from ..spaces import nb201

        return Candidate(nb201.architecture(cell), origin="sample", operator=f"optuna-{self.settings['sampler']}",
                         change={"operator": f"optuna-{self.settings['sampler']}", "cell": str(cell)})


def _value(node) -> Optional[float]:
    """What the study maximises: the validation accuracy of a trained (or diverged) node."""
    return node.valid_acc if node.status in ("ok", "diverged") else None
