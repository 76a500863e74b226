"""The loop turns clean stops into stop reasons by the `stop_code` protocol
(`strategies/base.py`), never by the LLM client's types: every client error keeps its code and
message, an error that is no stop stays an error, and any exception carrying the protocol stops."""
from __future__ import annotations

import pytest

from nader.agents.llm.errors import (BudgetExceeded, CallFailed, EndpointDown, LLMConfigError, ReplayMiss,
                                     RequestRejected)
from nader.search.loop import RAISE_THE_CAP, RUN_AGAIN, clean_stop
from nader.search.strategies.base import StopSearch

CASES = [
    (BudgetExceeded("token cap reached: 900 of 1,000 tokens", kind="tokens", limit=1000, spent=900),
     "token-limit", f"token cap reached: 900 of 1,000 tokens; {RAISE_THE_CAP}"),
    (BudgetExceeded("cost cap reached: $0.90 of $1.00", kind="cost", limit=1.0, spent=0.9),
     "cost-limit", f"cost cap reached: $0.90 of $1.00; {RAISE_THE_CAP}"),
    (EndpointDown("endpoint http://h/v1 down: 5 calls failed in a row"),
     "llm-stopped", f"endpoint http://h/v1 down: 5 calls failed in a row; {RUN_AGAIN}"),
    (ReplayMiss("the record has no answer to this call"), "llm-stopped",
     f"the record has no answer to this call; {RUN_AGAIN}"),
    (CallFailed("gave up after 3 tries"), "llm-stopped", f"gave up after 3 tries; {RUN_AGAIN}"),
    (RequestRejected("401 bad key", status=401), "llm-stopped", f"401 bad key; {RUN_AGAIN}"),
    (StopSearch("done", code="iterations"), "iterations", "done"),
]


@pytest.mark.parametrize("exc,code,message", CASES, ids=[type(c[0]).__name__ + "-" + c[1] for c in CASES])
def test_clean_stops_keep_their_code_and_message(exc, code, message):
    stop = clean_stop(exc)
    assert (stop.code, stop.message) == (code, message)


def test_errors_without_the_protocol_are_no_stop():
    assert clean_stop(LLMConfigError("no endpoint")) is None
    assert clean_stop(ValueError("a bug")) is None


def test_any_exception_with_the_protocol_stops():
    class Quota(Exception):
        stop_code = "quota"
        stop_reason = "the GPU quota is spent"
        stop_advice = "raise-cap"

    stop = clean_stop(Quota("ignored"))
    assert (stop.code, stop.message) == ("quota", f"the GPU quota is spent; {RAISE_THE_CAP}")
