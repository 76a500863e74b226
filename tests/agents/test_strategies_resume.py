"""Every registered strategy, interrupted and resumed, grows the tree an uninterrupted run grows
at the same seed: a strategy rebuilds its state from `tell` alone, and every random draw (`ask`,
`propose`, `tell`) comes from the loop's seeded sources.

The registry is iterated, so a new strategy is covered without editing this file. Strategies
that refuse the block language (random search) run in the NAS-Bench-201 cell space. The LLM
strategies talk to the loopback server with the scripted "LLM" (tests/agents/scripted.py); an
evaluator double answers each architecture at once from a hash of its text, one at a time, so
that the order of results, and so every decision, is a function of the tree.
"""
from __future__ import annotations

import re

import pytest

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.knowledge import KnowledgeBase
from nader.search.session import run_search
from nader.search.spaces.space import get_space
from nader.search.strategies import STRATEGIES
from nader.search.strategies.base import Strategy
from nader.search.tree import FINAL
from scripted import ScriptedLLM, _mutant, fenced
from search_helpers import HashEvaluator, arch_rows, settings
from test_fairnad_strategy import _ideas

TRIALS = 6
ANNEALING_TRIALS = 16  # no LLM, no training: cheap, and enough random acceptance steps to tell runs apart
LLM_OPTIONS = {"nader": {"rounds": 2}, "genius": {"iterations": TRIALS}, "fairnad": {"fair": 2, "pareto": 1,
                                                                                     "iterative": 2}}


class SearchingLLM(ScriptedLLM):
    """The scripted agents, and for GENIUS a mutation of the newest block in its history (the
    first fenced block of a prompt is the root's, which would make every proposal the same)."""

    def __call__(self, body):
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "Experiments so far" not in prompt:
            return super().__call__(body)
        rounds = sum(1 for m in body["messages"] if m["role"] == "assistant")
        newest = re.findall(r"```\n(.*?)\n```", prompt, re.S)[-1]
        return reply(fenced(_mutant(newest, f"{prompt}/{rounds}")))


class AnnealingStrategy(Strategy):
    """Simulated annealing's acceptance step: `tell` moves the current node to a worse one at
    random. Its state is a function of what it was told and `tell`'s rng alone."""

    name = "annealing-test"
    summary = "test double"

    def __init__(self, **options):
        super().__init__(**options)
        self.current = None

    def tell(self, node, rng):
        if node.status != "ok":
            return
        worse = self.current is not None and node.valid_acc < self.current.valid_acc
        if self.current is None or not worse or rng.random() < 0.5:
            self.current = node

    def ask(self, tree, rng):
        return self.current or tree.root


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    with KnowledgeBase.open(path) as kb:  # the offline MiniLM embedder, which the strategies open it with
        kb.add_ideas(_ideas(), threshold=1.01)  # FairNAD's tagged ideas; each its own
    return path


def _config(name, run, server, kb_dir, trials):
    cls = STRATEGIES[name]
    options = {}
    if "llm_base_url" in cls.options:
        options = {"llm_base_url": server.base_url, "llm_model": "local-model", **LLM_OPTIONS.get(name, {})}
        if "kb" in cls.options:
            options["kb"] = str(kb_dir)
    refuse = getattr(cls, "refuse_space", None)
    if refuse is not None and refuse(get_space("language")):
        return {"space": "nb201", "dataset": "cifar10", "preset": "nb201-12", "seeds": [777], "run_dir": str(run),
                "trials": trials, "strategy": name, "strategy_options": options}
    return settings(run, strategy=name, strategy_options=options, trials=trials, seeds=[0])


@pytest.mark.parametrize("name", [*STRATEGIES, AnnealingStrategy.name])
def test_an_interrupted_and_resumed_search_grows_the_uninterrupted_tree(name, server, kb_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(STRATEGIES, AnnealingStrategy.name, AnnealingStrategy)
    server.responder = SearchingLLM(mutate=True)
    trials = ANNEALING_TRIALS if name == AnnealingStrategy.name else TRIALS
    whole = run_search(_config(name, tmp_path / "whole", server, kb_dir, trials), evaluator=HashEvaluator())
    half = run_search(_config(name, tmp_path / "parts", server, kb_dir, trials // 2), evaluator=HashEvaluator())
    assert half.trials <= trials // 2
    rest = run_search(_config(name, tmp_path / "parts", server, kb_dir, trials), evaluator=HashEvaluator())
    assert rest.resumed and rest.stop.code == whole.stop.code
    expected = arch_rows(tmp_path / "whole")
    assert sum(1 for r in expected if r["status"] in FINAL) > trials // 2  # the resume had work to do
    assert arch_rows(tmp_path / "parts") == expected

