"""What each built-in strategy is called, does and takes, as data.

`nader-search run --help` lists every strategy with its options. Read from here, that listing
imports no strategy module, so a strategy module imports what it runs on (its agents, NB201's
space, the mutation engine) at its top, paid only by a run that uses it. Each built-in class
takes its `summary` and `options` from `DECLARED` (``summary, options = DECLARED[name]``), so they
are written once; tests/search/test_strategy_registry.py checks the table against the classes.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Tuple

from nader.agents.llm.options import LLM_SETTINGS, RUN_CAPS
from nader.inputs.settings import Integer, Real

from ..selection import POLICIES
from .base import Option


class Declared(NamedTuple):
    summary: str  # one line for `--help` and the docs
    options: Dict[str, Option]


SAMPLERS = ("tpe", "gp", "cmaes", "nsga2")  # optuna's
PREDICTORS = ("ridge", "ensemble", "bayes", "gp")  # predictor's models (scikit-learn)
ACQUISITIONS = ("mean", "ei", "ucb")  # predictor's acquisition functions

# The LLM strategies' endpoint options: the shared LLM settings, less the run's caps (the loop holds
# those: SearchContext.llm_caps), as strategy options of their type. "" and 0 leave the setting to
# the configuration.
_NUMBERS = {Real: float, Integer: int}
LLM_OPTIONS = {s.name: Option(_NUMBERS[type(s.kind)], 0, s.help.rstrip(".") + " [0: the configuration's]", minimum=0)
               if type(s.kind) in _NUMBERS else Option(str, "", s.help.rstrip("."))
               for s in LLM_SETTINGS if s not in RUN_CAPS}
# Where the endpoint is may change between the sessions of one run.
LLM_SESSION_OPTIONS = frozenset(LLM_OPTIONS)

#: the parent-selection policy's options (nader, tree)
_SELECTION = {
    "selection": Option(str, "nader", "parent-selection policy", choices=tuple(POLICIES)),
    "dfs": Option(float, 0.5, "nader: probability of a depth-first step", minimum=0.0),
    "width": Option(int, 3, "nader: children a node may have before it is closed", minimum=1),
}

#: `--strategy auto`, the default: no class of its own (`nader.search.auto` replaces it by what it chooses)
AUTO_SUMMARY = ("the recipe the benchmarks show best for the space, the budget and the data: `predictor` after a "
                "whole-space warm start in --space nb201, `rea` in the block language; a cell-space run says what it "
                "chose")

#: Built-in strategies by name, in LAZY_STRATEGIES' order.
DECLARED: Dict[str, Declared] = {
    "fairnad": Declared(
        "FairNAD: fair idea mutation, Pareto-aware refinement, iterative LLM mutation; compiler feedback", {
            "kb": Option(str, "", "knowledge base directory with tagged ideas (filled by `nader-search read`)"),
            "fair": Option(int, 8, "stage I: architectures per round (fair ideas on the top-k parents)", minimum=0),
            "pareto": Option(int, 8, "stage II: architectures per round (Pareto-aware refinement)", minimum=0),
            "iterative": Option(int, 4, "stage III: architectures per round (iterative LLM mutation)", minimum=0),
            "steps": Option(int, 2, "stage III: successive LLM edits per chain (d)", minimum=1),
            "threshold": Option(float, 0.9, "stage II: scale up below this fraction of a budget, else tune",
                                minimum=0.0),
            "repairs": Option(int, 2, "execution feedback: repair rounds after the first reply", minimum=0),
            **LLM_OPTIONS,
        }),
    "genius": Declared(
        "GENIUS: the LLM proposes the next architecture from every one tried and its accuracy (temperature 0)", {
            "iterations": Option(int, 10, "proposals to evaluate (the root is evaluated first, besides)", minimum=1),
            "repairs": Option(int, 2, "unusable replies sent back with the reason, per proposal", minimum=0),
            **LLM_OPTIONS,
        }),
    "local": Declared(
        "local search (White et al. 2020): best improving neighbour, restart at a local optimum", {
            "neighbours": Option(int, 24, "block language: most single mutations per neighbourhood", minimum=1),
        }),
    "nader": Declared(
        "NADER's agents: Proposer (knowledge base), Modifier (compiler feedback), Reflector (experience)", {
            "kb": Option(str, "", "knowledge base directory (filled by `nader-search read`)"),
            "reader": Option(bool, True, "ideas retrieved by similarity to the parent (false: drawn at random)"),
            "ranking": Option(bool, True, "the LLM ranks the candidate ideas (false: the most similar is taken)"),
            "feedback": Option(bool, True, "the compiler's diagnostics go back to the Modifier (false: one round)"),
            "experience": Option(bool, True, "the Reflector's lessons go into the Modifier's prompt"),
            "rounds": Option(int, 3, "Modifier rounds with feedback (k)", minimum=1),
            "candidates": Option(int, 5, "ideas the Proposer ranks", minimum=1),
            **_SELECTION,
            **LLM_OPTIONS,
        }),
    "optuna": Declared(
        "Optuna's samplers (tpe, gp, cmaes, nsga2) over the cell space, one categorical per edge (--space nb201)", {
            "sampler": Option(str, "tpe", "which Optuna sampler", choices=SAMPLERS),
            "startup": Option(int, 10, "tpe, gp: random trials before the model is used (n_startup_trials)",
                              minimum=1),
            "population": Option(int, 20, "nsga2: population size", minimum=2),
        }),
    "predictor": Declared(
        "a predictor (ridge, ridge ensemble, Bayesian ridge or GP on encodings and proxy ranks) picks among "
        "mutations of the best by an acquisition", {
            "initial": Option(int, 5, "trials before the model is used: the warm start's best, else uniform draws "
                                      "(or mutations of the root)", minimum=1),
            "model": Option(str, "ridge", "scikit-learn's predictor", choices=PREDICTORS),
            "alpha": Option(float, 1.0, "ridge and ensemble: the ridge penalty", minimum=0.0),
            "acquisition": Option(str, "mean", "the mean, expected improvement or mean + one std (ei and ucb need a "
                                               "model with a spread: not ridge)", choices=ACQUISITIONS),
            "radius": Option(int, 2, "trust region: edges changed (cells) or mutations chained (blocks)", minimum=1),
            "candidates": Option(int, 24, "block language: mutations of the best scored per proposal", minimum=1),
        }),
    "random": Declared(
        "random search: draw architectures uniformly without replacement (--space nb201; else use walk)", {}),
    "rea": Declared(
        "regularized evolution: tournament among the last P trained, oldest removed", {
            "population": Option(int, 20, "population size P (the last P trained architectures)", minimum=1),
            "sample_size": Option(int, 5, "tournament size S (sampled from the population)", minimum=1),
        }),
    "tree": Declared(
        "a parent-selection policy (nader, top-k, pareto) picks the node to mutate", {
            **_SELECTION,
            "k": Option(int, 5, "top-k: how many of the best nodes to choose among", minimum=1),
        }),
    "walk": Declared("random mutation walk: mutate a uniformly chosen node of the tree", {}),
}


def listing(strategies) -> List[Tuple[str, str, Dict[str, Option]]]:
    """(name, summary, options) of every strategy of the registry `strategies` (the package's
    `STRATEGIES`, which imports the strategy modules that import this one: hence passed in): a
    built-in one from `DECLARED` (its module is not imported), a registered one from its class."""
    out = []
    for name in strategies:
        if strategies.is_builtin(name):
            out.append((name, *DECLARED[name]))
        else:
            cls = strategies[name]
            out.append((name, cls.summary, cls.options))
    return out
