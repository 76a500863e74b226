"""`benchmarks/strategies.py`: the LLM strategies run against an endpoint (here the loopback
server) or from a recorded benchmark (--replay), and are skipped, with the reason, without
either. Training is real but tiny (128 digits, one epoch)."""
from __future__ import annotations

import importlib.util
import re
import sqlite3
from pathlib import Path

from knowledge_helpers import HashingEmbedder
from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.knowledge import KnowledgeBase
from scripted import ScriptedLLM
from test_fairnad_strategy import _ideas

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "strategies.py"


def _bench():
    spec = importlib.util.spec_from_file_location("strategies_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMALL = ["--trials", "3", "--seeds", "0", "--epochs", "1", "--train-limit", "128", "--threads", "1"]


def _texts(run_dir):
    conn = sqlite3.connect(run_dir / "runs.sqlite")
    rows = conn.execute("SELECT arch_id, status, text FROM archs ORDER BY arch_id").fetchall()
    conn.close()
    return rows


def test_llm_strategies_run_on_an_endpoint_replay_and_are_skipped_without(server, tmp_path, capsys):
    kb = tmp_path / "kb"
    with KnowledgeBase.open(kb, embedder=HashingEmbedder()) as k:
        k.add_ideas(_ideas(), threshold=1.01)
    bench = _bench()
    server.responder = ScriptedLLM(mutate=True)
    live = tmp_path / "live"
    assert bench.main([*SMALL, "--strategies", "walk,fairnad,genius", "--kb", str(kb), "--llm-base-url",
                       server.base_url, "--llm-model", "m", "--run-dir", str(live)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^fairnad\s+1\s+3\s+\d", out, re.M) and re.search(r"^walk\s+1\s+3\s+\d", out, re.M)
    assert (live / "strategies.html").is_file() and (live / "fairnad-seed0" / "report.html").is_file()
    from nader.search.strategies import STRATEGIES

    if "genius" not in STRATEGIES:
        assert "genius: skipped: not in this checkout's strategies" in out
    calls = len(server.chat_requests)
    assert calls > 0

    # From the record, without an endpoint: the same architectures, no request.
    replayed = tmp_path / "replayed"
    assert bench.main([*SMALL, "--strategies", "fairnad", "--kb", str(kb), "--replay", str(live),
                       "--run-dir", str(replayed)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^fairnad\s+1\s+3\s+\d", out, re.M)
    assert len(server.chat_requests) == calls
    assert _texts(replayed / "fairnad-seed0") == _texts(live / "fairnad-seed0")

    # Neither: listed as skipped with the reason.
    assert bench.main([*SMALL, "--strategies", "fairnad,nader", "--kb", str(kb), "--run-dir", str(tmp_path / "x")]) == 0
    out = capsys.readouterr().out
    assert "fairnad: skipped: no LLM" in out and "nader: skipped: no LLM" in out



