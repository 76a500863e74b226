"""The architecture search: the loop, its modification tree, strategies and training-free proxies.

    from nader.search import run_search
    summary = run_search({"root": "examples/resnet_basic.nad", "strategy": "rea", "trials": 8,
                          "run_dir": "runs/demo"})
    summary.best["text"]

Layout: `config.py` (settings, TOML, resume identity), `session.py` (one invocation: lock, store,
executor, loop), `loop.py` (propose, check, train, record), `checks.py` (verify, deduplicate,
fit), `store/` (the run store: every query on RUN/runs.sqlite), `tree.py` (what strategies see),
`evaluator.py` (what the loop calls to evaluate, and training behind it), `strategies/` (one per
file; what they propose is `candidate.py`), `selection/` (parent-selection policies), `proxies/`
(training-free proxies, one per file), `proxy_scorer.py` (scoring them, cached), `prescreen.py` and
`warm_start.py` (their uses), `records.py` (reading a run), `report/` (the HTML report),
`progress.py`, `cli.py`, `spaces/` (the NAS-Bench-201 cell space), `tables/` (tabular
benchmarks, and the evaluator that answers from one).
`study.py` is the Python API in Optuna's shape (`create_study`, `optimize`, `ask`/`tell`; what an
objective receives is `objective.py`, how it runs K at once `function_evaluator.py`, `pruners/` stop
trials early) and
`registry.py` registers strategies and evaluators (also by entry points); `objectives.py` holds
several objectives and the Pareto set. The search's nouns are in docs/architecture.md's glossary.
See docs/search.md and docs/api.md.
"""
from __future__ import annotations

from nader import lazy_exports

_EXPORTS = {
    "run_search": "session", "SearchSummary": "session",
    "SearchConfig": "config",
    "SearchLoop": "loop", "Observer": "loop", "Stop": "loop",
    "SearchStore": "store",
    "Tree": "tree", "TreeNode": "tree",
    "Evaluator": "evaluator", "TrainingEvaluator": "evaluator", "Trial": "evaluator", "SeedOutcome": "evaluator",
    "Strategy": "strategies", "Candidate": "candidate", "STRATEGIES": "strategies", "Option": "strategies",
    "POLICIES": "selection",
    "create_study": "study", "load_study": "study", "Study": "study", "StudyTrial": "study", "Arch": "objective",
    "TrialPruned": "objective", "Pruner": "pruners", "SuccessiveHalvingPruner": "pruners",
    "HyperbandPruner": "pruners", "MedianPruner": "pruners",
    "register_strategy": "strategies", "register_evaluator": "registry",
    "Objective": "objectives", "parse_objectives": "objectives",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
