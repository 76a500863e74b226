"""`nader-search run --llm-max-cost / --llm-max-tokens` are the LLM client's caps: a call whose
worst case could pass the cap is never sent, an endpoint that bills above a call's reservation
stops the run at once (booked at the reservation, so the cap holds, the server's figure named), usage
that is no count (NaN, negative) is booked at the reservation with a warning and the run goes on, an
honest endpoint's spend never passes the cap, and the old names --max-cost / --max-tokens still work (hidden, with a
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


def test_an_endpoint_billing_above_the_reservation_stops_the_run_at_once(server, tmp_path, caplog):
    # Each reply claims a million completion tokens (at $4/M: $4.00) for calls allowed 100.
    server.responder = lambda body: reply(f"```\n{WIDE}```", usage=(3000, 1_000_000))
    command = _command(tmp_path, server, "--llm-max-cost", "0.5")
    out, _ = _run(command)
    assert len(server.chat_requests) == 1
    assert out["stop_reason"] == "cost-limit"
    assert "the endpoint reported 3,000 prompt and 1,000,000 completion tokens ($4.00)" in out["stop_message"]
    assert "booked at the reservation" in out["stop_message"]
    # The warning goes to the log (stderr in a terminal; pytest captures it here).
    assert "warning: the endpoint reported 3,000 prompt and 1,000,000 completion tokens ($4.00)" in caplog.text
    calls, tokens, dollars = _spent(tmp_path)
    assert calls == 1 and tokens < 10_000 and 0 < dollars < 0.5  # the reservation, within the cap
    # The same command again goes on from the spend booked, under the cap, and stops the same way.
    out, _ = _run(command)
    assert len(server.chat_requests) == 2 and out["stop_reason"] == "cost-limit"
    assert _spent(tmp_path)[2] <= 0.5


@pytest.mark.parametrize("usage", [(float("nan"), 50), (-1_000_000, -10_000_000), (3000.5, 40)],
                         ids=["nan", "negative", "fractional"])
def test_usage_that_is_no_count_is_booked_at_the_reservation_and_the_run_goes_on(server, tmp_path, usage, caplog):
    server.responder = lambda body: reply(f"```\n{WIDE}```", usage=usage)
    out, result = _run(_command(tmp_path, server, "--llm-max-cost", "0.5"))
    assert "internal error" not in result.output and "NOT NULL" not in result.output
    assert "warning: the endpoint reported usage that is not a token count" in caplog.text
    assert "booked at its reservation" in caplog.text
    calls, tokens, dollars = _spent(tmp_path)
    assert calls >= 2 and tokens > 0 and 0 < dollars <= 0.5
    assert out["stop_reason"] in ("rejects", "trials", "cost-limit"), out["stop_message"]
    conn = sqlite3.connect(tmp_path / "run" / "runs.sqlite")
    per_arch = conn.execute("SELECT MIN(tokens_in), MIN(cost_usd), SUM(cost_usd) FROM archs WHERE origin != 'root'")
    low_tokens, low_cost, total = per_arch.fetchone()
    conn.close()
    assert low_tokens >= 0 and low_cost >= 0 and total == pytest.approx(dollars)


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
