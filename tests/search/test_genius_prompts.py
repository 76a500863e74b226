"""GENIUS never sends the same prompt twice: a proposal that gave nothing usable shows in the next
prompt's history with the reason, so a deterministic server (temperature 0) that always answers
the same unusable reply is asked distinct questions until `--max-invalid` stops the search."""
from __future__ import annotations

import json
import sqlite3

import pytest

from nb201_table import nb201_table  # noqa: F401 (fixture)
from llm_fixtures import server  # noqa: F401 (fixture)
from loopback import reply
from nader.search.session import run_search
from search_helpers import settings

# an operation with no close name: the compiler cannot repair it (Conv3d, once, became Conv2d and got a
# kernel_size), so its diagnostics go back
BROKEN = "##Broken##\n0:input\n1:output\n2:Swish\n0->2\n2->1\n"


def _sent(requests) -> list:
    return [json.dumps(body["messages"], sort_keys=True) for body in requests]


def test_a_block_that_never_verifies_gets_distinct_prompts_with_the_reason(server, tmp_path):
    server.responder = lambda body: reply(f"```\n{BROKEN}```")  # the same unusable reply, always
    run = tmp_path / "run"
    options = {"llm_base_url": server.base_url, "llm_model": "local-model", "repairs": 0}
    s = run_search(settings(run, strategy="genius", strategy_options=options, trials=5, max_invalid=9))
    # past GENIUS's own stop after 8 rejects in a row, which needs a repeat among them
    assert s.stop.code == "invalid" and s.trials == 1
    requests = server.chat_requests
    assert len(requests) == 9  # one reply per proposal, no repairs
    sent = _sent(requests)
    assert len(set(sent)) == len(sent)  # never a byte-identical prompt
    for before, after in zip(requests, requests[1:]):
        assert after["messages"] != before["messages"]
    last = requests[-1]["messages"][-1]["content"]
    # the 8 earlier proposals show, each with the compiler's reason
    assert last.count("No usable block: invalid, not evaluated: no usable answer after 1 replies") == 8
    assert "Swish" in last and "Swish" not in requests[0]["messages"][-1]["content"]
    conn = sqlite3.connect(run / "runs.sqlite")
    changes = [json.loads(c) for (c,) in conn.execute("SELECT change FROM archs WHERE arch_id > 0 ORDER BY arch_id")]
    conn.close()
    assert len(changes) == 9 and all("Swish" in c["failure"] for c in changes)


def test_a_cell_reply_that_never_parses_gets_distinct_prompts_and_resumes_them(server, tmp_path, request):
    pytest.importorskip("nats_bench.api_utils")
    table = request.getfixturevalue("nb201_table")
    server.responder = lambda body: reply("op_list = [3, 3, 3]")  # unusable, the same whatever is asked
    run = tmp_path / "run"
    cfg = {"space": "nb201", "dataset": "cifar10", "evaluator": f"nats-bench:{table}", "preset": "nb201-12",
           "seeds": [777], "strategy": "genius", "run_dir": str(run), "max_invalid": 2,
           "strategy_options": {"llm_base_url": server.base_url, "llm_model": "local-model", "repairs": 1}}
    assert run_search(cfg).stop.code == "invalid"
    assert len(server.chat_requests) == 4  # 2 proposals of 2 replies each
    more = run_search({**cfg, "max_invalid": 3})  # the history comes from the tree
    assert more.stop.code == "invalid"
    requests = server.chat_requests
    assert len(requests) == 6
    sent = _sent(requests)
    assert len(set(sent)) == len(sent)
    # the first request after an unusable reply carries its reason
    after_failure = requests[2]["messages"][-1]["content"]
    assert after_failure != requests[0]["messages"][-1]["content"]
    assert "No usable op_list: invalid, not evaluated: no usable answer after 2 replies: - op_list has 3 entries" \
        in after_failure
    assert requests[4]["messages"][-1]["content"].count("No usable op_list") == 2
