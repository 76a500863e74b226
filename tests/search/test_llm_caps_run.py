"""`nader-search run --llm-max-cost / --llm-max-tokens` are the LLM client's caps: a call whose
worst case could pass the cap is never sent, an endpoint that bills above a call's reservation
stops the run at once (booked as billed, the server's figure named), an honest endpoint's spend
never passes the cap, and the old names --max-cost / --max-tokens still work (hidden, with a
warning). The strategy is genius on the loopback server; training is real (digits)."""
from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.cli import main
from search_helpers import WIDE
from test_llm_faults import SEARCH_TOML

LLM_TOML = """[llm]
max_tokens = 100
request_timeout = 5
backoff_base = 0.01
[llm.prices."m"]
input = 1.0
output = 4.0
"""


def _command(tmp_path, server, *caps):
    (tmp_path / "llm.toml").write_text(LLM_TOML)
    (tmp_path / "search.toml").write_text(SEARCH_TOML.replace("trials = 2", "trials = 30"))
    return ["run", str(tmp_path / "search.toml"), "--strategy", "genius", "--llm-config", str(tmp_path / "llm.toml"),
            "--llm-base-url", server.base_url, "--llm-model", "m", "--run-dir", str(tmp_path / "run"),
            "--format", "json", *caps]


def _run(command):
    result = CliRunner().invoke(main, command)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), result


def _spent(tmp_path):
    conn = sqlite3.connect(tmp_path / "run" / "runs.sqlite")
    row = conn.execute("SELECT COUNT(*), SUM(prompt_tokens + completion_tokens), SUM(cost_usd) FROM llm_calls "
                       "WHERE source = 'endpoint'").fetchone()
    conn.close()
    return row


def test_a_cap_below_one_call_sends_nothing(server, tmp_path):
    server.responder = lambda body: reply(f"```\n{WIDE}```")
    out, _ = _run(_command(tmp_path, server, "--llm-max-cost", "0.00001"))
    assert server.chat_requests == []
    assert out["stop_reason"] == "cost-limit"
    message = out["stop_message"]
    assert re.fullmatch(r"cost cap reached: \$0 spent of the \$0\.00001 cap; the next call may cost up to "
                        r"\$0\.00\d\d; raise the cap \(--llm-max-cost, --llm-max-tokens\) and run the same command again "
                        r"to resume", message), message


def test_an_endpoint_billing_above_the_reservation_stops_the_run_at_once(server, tmp_path):
    # Each reply claims a million completion tokens (at $4/M: $4.00) for calls allowed 100.
    server.responder = lambda body: reply(f"```\n{WIDE}```", usage=(3000, 1_000_000))
    command = _command(tmp_path, server, "--llm-max-cost", "0.5")
    out, _ = _run(command)
    assert len(server.chat_requests) == 1
    assert out["stop_reason"] == "cost-limit"
    assert "the endpoint reported 3,000 prompt and 1,000,000 completion tokens ($4.00)" in out["stop_message"]
    calls, _, dollars = _spent(tmp_path)
    assert calls == 1 and dollars == pytest.approx(4.003)  # booked as billed
    # The same command again sends nothing: the run's spend is over the cap.
    out, _ = _run(command)
    assert len(server.chat_requests) == 1 and out["stop_reason"] == "cost-limit"
    assert out["stop_message"].startswith("cost cap reached: $4.00 spent of the $0.5 cap; raise the cap")


def test_an_honest_endpoint_never_passes_the_token_cap(server, tmp_path):
    server.responder = lambda body: reply(f"```\n{WIDE}```")  # usage: about 4 characters a token
    cap = 12_000
    out, _ = _run(_command(tmp_path, server, "--llm-max-tokens", str(cap)))
    calls, tokens, _ = _spent(tmp_path)
    assert out["stop_reason"] == "token-limit", out["stop_message"]
    assert calls >= 2 and tokens <= cap


def test_the_old_flag_names_still_work_and_say_so(server, tmp_path):
    server.responder = lambda body: reply(f"```\n{WIDE}```")
    out, result = _run(_command(tmp_path, server, "--max-cost", "0.00001"))
    assert out["stop_reason"] == "cost-limit" and server.chat_requests == []
    assert "warning: --max-cost is now --llm-max-cost" in result.stderr
    both = CliRunner().invoke(main, _command(tmp_path, server, "--max-tokens", "5", "--llm-max-tokens", "5"))
    assert both.exit_code == 2 and "--max-tokens is the old name of --llm-max-tokens" in both.output
    shown = CliRunner().invoke(main, ["run", "--help"]).output
    assert "--llm-max-cost" in shown and "--llm-max-tokens" in shown
    assert not re.search(r"--max-(cost|tokens)\b", shown)


def test_the_caps_come_from_the_search_toml_too(server, tmp_path):
    server.responder = lambda body: reply(f"```\n{WIDE}```")
    command = _command(tmp_path, server)
    (tmp_path / "search.toml").write_text(SEARCH_TOML.replace("[train]", "llm-max-cost = 0.00001\n[train]"))
    out, _ = _run(command)
    assert out["stop_reason"] == "cost-limit" and server.chat_requests == []
