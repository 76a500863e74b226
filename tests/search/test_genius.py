"""`--strategy genius` against the loopback OpenAI-API server: searches in the NAS-Bench-201 cell
space (answered by a generated table) and in the block language (trained on digits) complete and
resume; the prompt holds the history with its accuracies; temperature is 0; unusable replies go
back with the reason; a recorded run replays without an endpoint."""
from __future__ import annotations

import re
import sqlite3

import pytest

pytest.importorskip("nats_bench.api_utils")

import nb201_table as T  # noqa: E402
from nb201_table import nb201_table  # noqa: F401,E402 (fixture)
from llm_fixtures import no_outside_network, server  # noqa: F401,E402 (fixtures)
from loopback import reply  # noqa: E402
from nader.runtime.errors import ConfigError  # noqa: E402
from nader.search.session import run_search  # noqa: E402
from nader.search.spaces import nb201 as S  # noqa: E402
from search_helpers import WIDE, settings  # noqa: E402

# the cells the scripted "LLM" proposes, in order, skipping any already in the prompt's history
PROPOSALS = ["[3, 3, 3, 1, 3, 3]", "[3, 3, 3, 1, 3, 1]", "[3, 0, 3, 1, 0, 1]", "[2, 3, 3, 1, 3, 3]",
             "[3, 3, 2, 1, 3, 3]", "[3, 3, 3, 3, 3, 3]"]
HISTORY_LINE = re.compile(r"^\d+\. op_list = (\[[0-9, ]+\])  \((\S+)\): (.*)$", re.M)


class CellLLM:
    """Answers genius_cell prompts: the first proposal not yet in the history; the very first reply
    of the search is unusable (an op_list of five), to exercise the repair turn."""

    def __init__(self):
        self.calls = 0

    def __call__(self, body):
        self.calls += 1
        if self.calls == 1:
            return reply("I suggest op_list = [3, 3, 3, 1, 3]")
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        tried = {m.group(1) for m in HISTORY_LINE.finditer(prompt)}
        choice = next(p for p in PROPOSALS if p not in tried)
        return reply(f"More 3x3 convolutions should help.\nop_list = {choice}")


@pytest.fixture
def table(nb201_table):
    return nb201_table


def _cell_settings(run, table, server, **extra):
    options = {"llm_base_url": server.base_url, "llm_model": "local-model", "iterations": 4,
               **extra.pop("options", {})}
    return {"space": "nb201", "dataset": "cifar10", "evaluator": f"nats-bench:{table}", "preset": "nb201-12",
            "seeds": [777], "strategy": "genius", "strategy_options": options, "run_dir": str(run), **extra}


def _rows(run, sql):
    conn = sqlite3.connect(run / "runs.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_genius_in_the_cell_space_completes_resumes_and_shows_the_history(server, tmp_path, table):
    server.responder = CellLLM()
    run = tmp_path / "run"
    first = run_search(_cell_settings(run, table, server, trials=3))  # the root and 2 proposals
    assert first.stop.code == "trials" and first.trials == 3
    calls_before = len(server.chat_requests)
    assert calls_before == 3  # proposal 1 took a repair
    second = run_search(_cell_settings(run, table, server, trials=30))
    assert second.resumed and second.stop.code == "iterations" and second.trials == 5
    requests = server.chat_requests
    assert len(requests) == calls_before + 2
    assert all(body["temperature"] == 0 for body in requests)
    # the repair turn carries the reason
    repair = requests[1]["messages"]
    assert repair[-2]["role"] == "assistant" and "op_list has 5 entries" in repair[-1]["content"]
    # the last prompt lists the root and every proposal with the table's validation accuracy
    prompt = requests[-1]["messages"][-1]["content"]
    history = HISTORY_LINE.findall(prompt)
    assert [h[1] for h in history][:1] == [S.RESNET] and len(history) == 4
    for op_list, cell, result in history:
        assert result == f"validation accuracy {T.valid_accuracy(cell):.2f}%"
        assert S.parse_cell_reply(f"op_list = {op_list}") == S.CellStructure.parse(cell)
    assert "This is proposal 4 of 4" in prompt
    rows = _rows(run, "SELECT arch_id, parent_id, status, operator, valid_acc, tokens_in, tokens_out FROM archs "
                      "ORDER BY arch_id")
    assert [r[2] for r in rows] == ["ok"] * 5 and [r[3] for r in rows[1:]] == ["genius"] * 4
    assert [r[1] for r in rows] == [None, 0, 1, 2, 3]  # the chain of iterations
    assert all(r[5] > 0 and r[6] > 0 for r in rows[1:])
    assert second.best["valid_acc"] == pytest.approx(max(T.valid_accuracy(S.cell_of_text(t)) for (t,) in
                                                        _rows(run, "SELECT text FROM archs")))
    llm_rows = _rows(run, "SELECT COUNT(*) FROM llm_calls WHERE role='genius'")
    assert llm_rows[0][0] == len(requests)


def test_a_recorded_genius_run_replays_without_an_endpoint(server, tmp_path, table, no_outside_network):
    server.responder = CellLLM()
    recorded = tmp_path / "recorded"
    run_search(_cell_settings(recorded, table, server, options={"iterations": 2}))
    texts = [t for (t,) in _rows(recorded, "SELECT text FROM archs ORDER BY arch_id")]
    calls = len(server.chat_requests)
    replayed = tmp_path / "replayed"
    s = run_search(_cell_settings(replayed, table, server, options={"iterations": 2, "llm_base_url": "",
                                                                    "replay": str(recorded)}))
    assert s.stop.code == "iterations"
    assert [t for (t,) in _rows(replayed, "SELECT text FROM archs ORDER BY arch_id")] == texts
    assert len(server.chat_requests) == calls  # nothing asked of the endpoint


BLOCKS = [WIDE, """##Pooled##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=1,bias=0)
3:BN
4:AvgPool2d(kernel_size=3,stride=1)
5:Add
0->2
2->3
3->4
4,0->5
5->1
"""]
# an operation with no close name: the compiler cannot repair it (Conv3d, once, became Conv2d and got a
# kernel_size), so its diagnostics go back
BROKEN = "##Broken##\n0:input\n1:output\n2:Swish\n0->2\n2->1\n"


class BlockLLM:
    """Answers genius_block prompts with BLOCKS[proposal - 1]; the first reply is a block with an
    unknown operation, so the compiler's diagnostics go back once."""

    def __init__(self):
        self.calls = 0

    def __call__(self, body):
        self.calls += 1
        if self.calls == 1:
            return reply(f"```\n{BROKEN}```")
        prompt = body["messages"][1]["content"]
        n = int(re.search(r"This is proposal (\d+) of", prompt).group(1))
        return reply(f"A residual block should do better.\n```\n{BLOCKS[n - 1]}```")


def test_genius_in_the_block_language_completes_and_resumes(server, tmp_path):
    server.responder = BlockLLM()
    run = tmp_path / "run"
    options = {"llm_base_url": server.base_url, "llm_model": "local-model", "iterations": 2}
    first = run_search(settings(run, strategy="genius", strategy_options=options, trials=2))
    assert first.stop.code == "trials" and first.trials == 2
    second = run_search(settings(run, strategy="genius", strategy_options=options, trials=30))
    assert second.resumed and second.stop.code == "iterations" and second.trials == 3
    requests = server.chat_requests
    assert len(requests) == 3 and all(body["temperature"] == 0 for body in requests)
    assert "Swish" in requests[1]["messages"][-1]["content"]  # the compiler's diagnostic went back
    rows = _rows(run, "SELECT arch_id, status, operator, valid_acc, text FROM archs ORDER BY arch_id")
    assert [r[1] for r in rows] == ["ok"] * 3 and [r[2] for r in rows[1:]] == ["genius"] * 2
    assert rows[1][4].startswith("##Wide##") and "##Wide_stem##" in rows[1][4]
    # the second proposal's prompt shows the root and the first proposal, each with its accuracy
    prompt = requests[-1]["messages"][1]["content"]
    for arch_id, _status, _op, valid, _text in rows[:2]:
        assert f"validation accuracy {valid:.2f}%" in prompt
    assert "##Wide##" in prompt and "This is proposal 2 of 2" in prompt


def test_genius_needs_an_endpoint_or_a_replay_before_anything_trains(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./nader.toml
    with pytest.raises(ConfigError, match="no LLM endpoint configured"):
        run_search(settings(tmp_path / "run", strategy="genius"))
    assert not (tmp_path / "run" / "runs.sqlite").exists()  # a refused start leaves no run behind
    with pytest.raises(ConfigError, match="cannot read"):
        run_search(settings(tmp_path / "run", strategy="genius", strategy_options={"llm_config": "none.toml"}))


def test_genius_stops_when_the_model_keeps_repeating_itself(server, tmp_path, table):
    """At temperature 0 a model may answer the same cell whatever the history says: every repeat is
    recorded as a duplicate and shown in the next prompt, and after 8 in a row the search stops."""
    server.responder = lambda body: reply("op_list = [3, 0, 3, 1, 0, 1]")  # the root, again and again
    s = run_search(_cell_settings(tmp_path / "run", table, server))
    assert s.stop.code == "rejects" and s.trials == 1
    assert len(server.chat_requests) == 8
    prompt = server.chat_requests[-1]["messages"][-1]["content"]
    assert prompt.count("already tried as experiment #0") == 7


def test_a_reply_cut_at_the_token_limit_is_told_so_in_the_repair(server, tmp_path):
    from contextlib import closing

    from llm_fixtures import make_client
    from loopback import truncated
    from nader.agents.genius import Genius

    answers = iter([truncated("op_list = [3, 3, 3, 3, 3, 3] " * 30 + "op_list = [3,"), reply("op_list = [3, 3, 3, 1, 3, 2]")])
    server.responder = lambda body: next(answers)

    def check(text):
        found = re.findall(r"op_list = \[[0-9, ]*\]", text)
        return (found[-1], "") if len(found) == 1 else (None, "- give exactly one op_list")

    with closing(make_client(server, tmp_path)) as client:
        answer = Genius(client, repairs=1, iterations=10, dataset="cifar10", skeleton="nb201").answer(
            [], 1, check, cells=True, arch_id="1")
    assert answer.text == "op_list = [3, 3, 3, 1, 3, 2]" and answer.replies == 2
    repair = server.chat_requests[1]["messages"][-1]["content"]
    assert repair.index("cut off at the token limit") < repair.index("give exactly one op_list")
