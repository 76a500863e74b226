"""The declared strategy interface: `run_search` binds every strategy once to the search's
context before anything trains and closes it once, also when the run fails; the space, network
and usage callback come from the context."""
from __future__ import annotations

import pytest

from nader.search.session import run_search
from nader.search.strategies import STRATEGIES
from nader.search.strategies.walk import WalkStrategy
from search_helpers import TableEvaluator, settings


class Recording(WalkStrategy):
    name = "recording-test"
    calls: list = []

    def bind(self, context):
        super().bind(context)
        Recording.calls.append(("bind", context))

    def close(self):
        Recording.calls.append(("close", None))


class Failing(Recording):
    def ask(self, tree, rng):
        raise RuntimeError("a bug in the strategy")


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    Recording.calls = []
    monkeypatch.setitem(STRATEGIES, Recording.name, Recording)


def test_a_strategy_is_bound_to_the_search_once_and_closed_once(tmp_path):
    run = tmp_path / "run"
    summary = run_search(settings(run, strategy=Recording.name, trials=3), evaluator=TableEvaluator())
    assert summary.trials == 3
    assert [kind for kind, _ in Recording.calls] == ["bind", "close"]
    context = Recording.calls[0][1]
    assert context.run_dir == run and context.dataset == "digits" and context.depths == (1, 1, 1)
    assert context.space.name == "language" and context.budget is not None


def test_a_failing_run_still_closes_the_strategy(tmp_path, monkeypatch):
    monkeypatch.setitem(STRATEGIES, Recording.name, Failing)
    with pytest.raises(RuntimeError, match="a bug in the strategy"):
        run_search(settings(tmp_path / "run", strategy=Recording.name, trials=3), evaluator=TableEvaluator())
    assert [kind for kind, _ in Recording.calls] == ["bind", "close"]


def test_the_usage_callback_books_tokens_on_the_architecture(tmp_path):
    from nader.search.store import SearchStore

    class Teller(Recording):
        def tell(self, node, rng):  # a lesson learnt from the result, as NADER's Reflector's
            self.context.add_usage(node.arch_id, 7, 3, 0.5)

    STRATEGIES[Recording.name] = Teller
    run = tmp_path / "run"
    run_search(settings(run, strategy=Recording.name, trials=2), evaluator=TableEvaluator())
    store = SearchStore(run)
    try:
        rows = store.conn.execute("SELECT tokens_in, tokens_out, cost_usd FROM archs WHERE status = 'ok'").fetchall()
    finally:
        store.close()
    assert rows and all(tuple(r) == (7, 3, 0.5) for r in rows)
