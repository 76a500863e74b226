"""The client's caps against the loopback server: no call is sent whose worst case could pass a
cap, a reply billed above its reservation is booked as billed and stops at once (the server's
figure named), a rejected request counts toward the breaker, and the messages give dollars in
significant figures with their advice once. No call leaves the machine (the guard)."""
from __future__ import annotations

import random
import re
from contextlib import closing

import pytest

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import reply, status
from nader.agents.llm import BudgetExceeded, EndpointDown, RequestRejected
from nader.agents.llm.accounting import dollars
from nader.agents.llm.config import load_config


def _prices(tmp_path, output: float, input: float = 0.0):
    toml = tmp_path / "prices.toml"
    toml.write_text(f'[llm.prices."priced"]\ninput = {input}\noutput = {output}\n')
    return load_config(toml).prices


def test_dollars_in_significant_figures():
    assert [dollars(x) for x in (0.00021, 0.0001, 0.5, 0.25, 4.0, 1234.5, 0.0)] == \
        ["$0.00021", "$0.0001", "$0.5", "$0.25", "$4.00", "$1,234.50", "$0"]
    assert dollars(0.0000999999999) == "$0.0001"  # a sum of floats just under a round figure


def test_a_call_whose_worst_case_could_pass_the_cap_is_never_sent(server, tmp_path):
    # $1 per million tokens either way; 4096 completion tokens at most: about $0.0041 a call.
    prices = _prices(tmp_path, output=1.0, input=1.0)
    with closing(make_client(server, tmp_path / "run", model="priced", prices=prices, max_cost_usd=0.00001)) as client:
        with pytest.raises(BudgetExceeded) as stop:
            client.chat_sync(user("hello"))
    assert server.chat_requests == []
    message = str(stop.value)
    assert stop.value.reason == "cost cap reached: $0 spent of the $0.00001 cap; the next call may cost up to $0.0041"
    assert not re.search(r"\$0\.0+(?!\d)", message) and message.count("run again to resume") == 1


def test_honest_usage_never_passes_a_cap(server, tmp_path):
    rng = random.Random(5)
    # The server bills at most what was reserved: a prompt within its estimate, a completion
    # within max_tokens; the spend climbs to the cap and never past it.
    server.responder = lambda body: reply("x", usage=(rng.randint(1, 10), rng.randint(1, 200)))
    prices = _prices(tmp_path, output=100.0, input=100.0)
    cap = 0.2
    with closing(make_client(server, tmp_path / "run", model="priced", prices=prices, max_tokens=200,
                             max_cost_usd=cap)) as client:
        spent = []
        with pytest.raises(BudgetExceeded) as stop:
            for i in range(1000):
                client.chat_sync(user(f"question {i} " + "y" * 20))
                spent.append(client.ledger.spent_cost)
    assert stop.value.kind == "cost" and len(spent) >= 5
    assert max(spent) <= cap and len(server.chat_requests) == len(spent)


@pytest.mark.parametrize("kind", ["cost", "tokens"])
def test_a_reply_billed_above_its_reservation_is_booked_at_it_and_stops_at_once(server, tmp_path, kind):
    # The server claims a million completion tokens for a call allowed 100: $4.00 at $4/M.
    server.responder = lambda body: reply("tiny", usage=(20, 1_000_000))
    prices = _prices(tmp_path, output=4.0)
    cap = {"max_cost_usd": 0.5} if kind == "cost" else {"max_total_tokens": 50_000}
    with closing(make_client(server, tmp_path / "run", model="priced", prices=prices, max_tokens=100,
                             **cap)) as client:
        with pytest.raises(BudgetExceeded) as stop:
            client.chat_sync(user("one"))
        booked = client.ledger.spent_cost, client.ledger.spent_tokens
        with pytest.raises(BudgetExceeded):  # and nothing more is sent in this session
            client.chat_sync(user("two"))
        rows = client.store.rows()
    assert len(server.chat_requests) == 1
    # booked at the reservation (the prompt's estimate plus max_tokens): the cap is not passed
    assert 0 < booked[0] <= 0.5 and 100 < booked[1] < 200
    assert stop.value.kind == kind
    assert "the endpoint reported 20 prompt and 1,000,000 completion tokens ($4.00)" in stop.value.reason
    # recorded as answered: a resumed run gets the reply back free instead of asking again
    assert [(r["status"], r["cost_usd"], r["prompt_tokens"] + r["completion_tokens"]) for r in rows] == \
        [("ok", pytest.approx(booked[0]), booked[1])]


def test_usage_within_the_reservation_does_not_stop(server, tmp_path):
    server.responder = lambda body: reply("fine", usage=(2, 100))
    prices = _prices(tmp_path, output=4.0)
    with closing(make_client(server, tmp_path / "run", model="priced", prices=prices, max_tokens=100,
                             max_cost_usd=0.5)) as client:
        for i in range(3):
            client.chat_sync(user(f"q{i}"))
    assert len(server.chat_requests) == 3


def test_rejected_requests_count_toward_the_breaker(server, tmp_path):
    server.responder = lambda body: status(401)
    with closing(make_client(server, tmp_path, breaker_failures=2)) as client:
        with pytest.raises(RequestRejected):
            client.chat_sync(user("a"))
        with pytest.raises(EndpointDown) as down:
            client.chat_sync(user("b"))
        with pytest.raises(EndpointDown):
            client.chat_sync(user("c"))
    assert len(server.chat_requests) == 2
    assert "2 calls failed in a row" in down.value.reason and "HTTP 401" in down.value.reason
    assert str(down.value).count("resume") == 1
