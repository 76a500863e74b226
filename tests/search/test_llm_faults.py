"""Endpoint faults end a search as a clean, resumable `llm-stopped` (exit 3), never an internal
error: each fault of the loopback server (a 429 storm, 500s, a hung server, a trickling server, a
truncated body, a malformed JSON body) is driven through `nader-search run` with each LLM
strategy. Short timeouts and a breaker of 2 keep it fast: the first failed call is a rejected
proposal (with its reason) and the second opens the breaker. The same run directory goes
through every fault in turn, and then resumes against a healthy server.

Training is real (the root on 256 digits, one epoch)."""
from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from knowledge_helpers import HashingEmbedder
from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import cut, hang, malformed, reply, status, trickle
from nader.cli import main
from nader.agents.knowledge import Idea, KnowledgeBase
from search_helpers import EXAMPLE, WIDE

FAULTS = {
    "429 storm": lambda: status(429, retry_after=0),
    "500s": lambda: status(500),
    "hung server": hang,
    "trickling server": lambda: trickle(0.2),
    "truncated body": cut,
    "malformed JSON body": malformed,
}
LLM_TOML = """[llm]
request_timeout = 0.5
deadline = 5
max_retries = 1
backoff_base = 0.01
backoff_max = 0.02
breaker_failures = 2
"""
SEARCH_TOML = f"""from = "{EXAMPLE}"
dataset = "digits"
preset = "quick"
depths = [1, 1, 1]
epochs = 1
threads = 1
trials = 2
[train]
train_limit = 256
eval_limit = 128
"""
STRATEGY_FLAGS = {
    "nader": ["--no-reader", "--no-experience"],  # ideas drawn at random: no embedding model to load
    "genius": [],
    "fairnad": ["--option", "fair=1", "--option", "pareto=1", "--option", "iterative=0"],
}


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    with KnowledgeBase.open(path, embedder=HashingEmbedder()) as kb:
        kb.add_ideas([Idea("replace ReLU activations with GELU", "p", "operation level", "activation"),
                      Idea("add a squeeze and excitation gate", "p", "block and connectivity level",
                           "adaptive feature recalibration")], threshold=1.01)
    return path




def _healthy(body):
    """Every agent answered: the Proposer's JSON plan, else (Modifier, GENIUS) the WIDE block."""
    if "propose exactly one" in body["messages"][0]["content"]:
        return reply(json.dumps({"ranking": [1, 2], "idea": 1, "plan": "widen the block with a residual add"}))
    return reply(f"A residual block should do better.\n```\n{WIDE}```")


def _command(tmp_path, server, kb_dir, strategy):
    (tmp_path / "llm.toml").write_text(LLM_TOML)
    (tmp_path / "search.toml").write_text(SEARCH_TOML)
    kb = ["--kb", str(kb_dir)] if strategy != "genius" else []
    return ["run", str(tmp_path / "search.toml"), "--strategy", strategy, *kb, *STRATEGY_FLAGS[strategy],
            "--llm-config", str(tmp_path / "llm.toml"), "--llm-base-url", server.base_url, "--llm-model", "m",
            "--run-dir", str(tmp_path / "run"), "--format", "json"]


@pytest.mark.parametrize("strategy", ["nader", "genius", "fairnad"])
def test_every_endpoint_fault_is_a_clean_resumable_stop(server, tmp_path, kb_dir, strategy):
    command = _command(tmp_path, server, kb_dir, strategy)
    for name, fault in FAULTS.items():
        server.responder = lambda body, fault=fault: fault()
        asked = len(server.chat_requests)
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 3, (name, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output, name
        out = json.loads(result.stdout)
        assert out["stop_reason"] == "llm-stopped", (name, out["stop_message"])
        assert out["stop_message"].endswith("; run the same command again to resume"), name
        assert "2 calls failed in a row" in out["stop_message"], name
        assert len(server.chat_requests) > asked, name

    # The first failed call of each session is a rejected proposal that names the failure.
    conn = sqlite3.connect(tmp_path / "run" / "runs.sqlite")
    rejected = [json.loads(d)["message"] for d, in conn.execute(
        "SELECT diagnostics FROM archs WHERE status = 'invalid' ORDER BY arch_id")]
    sessions = [r for r, in conn.execute("SELECT stop_reason FROM search_sessions ORDER BY session")]
    conn.close()
    assert len(rejected) == len(FAULTS)
    assert all(m.startswith("the LLM call failed: chat call to ") for m in rejected), rejected
    assert any(re.search(r"HTTP 429", m) for m in rejected) and any("HTTP 500" in m for m in rejected)
    assert sum("no reply within 0.5 s" in m for m in rejected) == 2  # the hung and the trickling server
    assert sessions == ["llm-stopped"] * len(FAULTS)

    # The endpoint answers again: the same command resumes and the search goes on to its end.
    server.responder = _healthy
    result = CliRunner().invoke(main, command)
    out = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert out["resumed"] and out["stop_reason"] in ("trials", "iterations"), out["stop_message"]


def test_a_stop_met_while_told_a_result_stops_the_loop_at_its_next_ask():
    from types import SimpleNamespace

    from nader.agents.llm import EndpointDown
    from nader.agents.tokens import Spent
    from nader.search.loop import clean_stop
    from nader.search.strategies.nader import NaderStrategy
    from nader.search.tree import TreeNode, Tree

    class Reflector:
        experiences = SimpleNamespace(has_training=lambda arch_id: False)

        def record_training(self, *args, **kwargs):
            raise EndpointDown("endpoint http://127.0.0.1:9/v1 down: 5 calls failed in a row")

    strategy = NaderStrategy(kb="unused")
    strategy._agents = SimpleNamespace(reflector=Reflector(), counting=SimpleNamespace(take=Spent))
    root = TreeNode(0, None, 0, "ok", text="", valid_acc=50.0)
    strategy.tell(TreeNode(1, 0, 1, "ok", text="", valid_acc=51.0, change={"plan": "widen"}), None)  # no exception here
    with pytest.raises(EndpointDown) as stopped:
        strategy.ask(Tree([root]), None)
    stop = clean_stop(stopped.value)
    assert stop.code == "llm-stopped"
    assert stop.message == "endpoint http://127.0.0.1:9/v1 down: 5 calls failed in a row; run the same command again to resume"
