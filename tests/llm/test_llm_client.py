"""The LLM client against the loopback server: parameters, retries, timeouts, breaker, caps,
concurrency, accounting, record, cache and replay. No call leaves the machine (the guard)."""
from __future__ import annotations

import asyncio
import json
import random
import time
from contextlib import closing

import pytest

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import LoopbackServer, cut, hang, malformed, reply, slow, status, truncated
from nader.agents.llm import (BudgetExceeded, CallFailed, EndpointDown, LLMClient, LLMConfig, LLMConfigError,
                              ReplayMiss, RequestRejected)
from nader.agents.llm.config import load_config


# ------------------------------------------------------------------ parameters and profiles
def test_default_profile_sends_max_tokens_temperature_and_json_object(server, tmp_path):
    with closing(make_client(server, tmp_path, temperature=0.3, max_tokens=77)) as client:
        got = client.chat_sync(user("Say hi in JSON"), json=True)
    assert got.text == "ok" and got.source == "endpoint"
    (body,) = server.chat_requests
    assert body["model"] == "local-model"
    assert body["max_tokens"] == 77 and "max_completion_tokens" not in body
    assert body["temperature"] == 0.3
    assert body["response_format"] == {"type": "json_object"}
    assert "reasoning_effort" not in body


def test_reasoning_model_profile_uses_max_completion_tokens_and_no_temperature(server, tmp_path):
    with closing(make_client(server, tmp_path, model="o3-mini", temperature=0.3, max_tokens=50,
                             reasoning_effort="low")) as client:
        client.chat_sync(user("hi"), schema={"title": "answer", "type": "object"})
    (body,) = server.chat_requests
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body
    assert "temperature" not in body
    assert body["reasoning_effort"] == "low"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == {"title": "answer", "type": "object"}


def test_user_profile_overrides_builtin(server, tmp_path):
    path = tmp_path / "nader.toml"
    path.write_text(f'[llm]\nbase_url = "{server.base_url}"\nmodel = "my-reasoner-7b"\ntemperature = 0.9\n'
                    '[llm.profiles."my-reasoner*"]\ntoken_param = "max_completion_tokens"\ntemperature = false\n'
                    'json = "none"\n')
    config = load_config(path)
    with closing(LLMClient.from_config(config)) as client:
        client.chat_sync(user("hi"), json=True)
    (body,) = server.chat_requests
    assert "max_completion_tokens" in body and "temperature" not in body and "response_format" not in body


# ------------------------------------------------------------------ configuration
def test_config_from_toml_flags_and_environment(tmp_path, monkeypatch):
    path = tmp_path / "c.toml"
    path.write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "a"\nmax_cost_usd = 2\n'
                    'api_key_env = "MY_GATEWAY_KEY"\n[llm.prices."a"]\ninput = 1.5\noutput = 3\n')
    monkeypatch.setenv("MY_GATEWAY_KEY", "secret-1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = load_config(path, {"model": "b", "max_concurrency": None})
    assert (config.base_url, config.model, config.max_cost_usd, config.max_concurrency) == \
           ("http://127.0.0.1:9/v1", "b", 2.0, 4)
    assert config.prices[0].input == 1.5 and config.resolved_key() == "secret-1"
    assert "secret-1" not in repr(config)
    monkeypatch.delenv("MY_GATEWAY_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "secret-2")
    assert config.resolved_key() == "secret-2"


@pytest.mark.parametrize("text, message", [
    ('[llm]\nmodle = "x"\n', "unknown key 'modle'"),
    ('[llm]\nmax_tokens = 0\n', "max_tokens must be > 0"),
    ('[llm]\nbase_url = "localhost:8000"\n', "must start with http"),
    ('[llm.profiles."x*"]\ntoken_param = "max_len"\n', "token_param must be one of"),
    ('[llm.prices."x"]\noutput = 1\n', "give `input` and `output`"),
    ('[llm]\nreasoning_effort = "extreme"\n', "reasoning_effort must be one of"),
])
def test_bad_config_is_a_readable_error(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(LLMConfigError, match=message.replace("(", r"\(")):
        load_config(path)


def test_no_endpoint_no_client():
    with pytest.raises(LLMConfigError, match="no LLM endpoint configured"):
        LLMClient.from_config(LLMConfig(model="m"))


def test_dollar_cap_needs_a_price(server):
    with pytest.raises(LLMConfigError, match="has no price"):
        make_client(server, model="unpriced-local", max_cost_usd=1.0)


# ------------------------------------------------------------------ retries, timeouts, breaker
def test_retries_429_500_malformed_and_cut_replies_then_succeeds(server, tmp_path):
    server.chat_script += [status(429, retry_after=0.01), status(500), malformed(), cut(), reply("finally")]
    with closing(make_client(server, tmp_path, max_retries=4)) as client:
        got = client.chat_sync(user("hi"))
        (row,) = client.store.rows()
    assert got.text == "finally" and len(server.chat_requests) == 5
    assert row["status"] == "ok" and row["attempts"] == 5
    assert "HTTP 429" in row["error"] and "HTTP 500" in row["error"] and "malformed reply" in row["error"]


def test_retries_give_up_after_max_retries(server, tmp_path):
    server.chat_script += [status(503)] * 3
    with closing(make_client(server, tmp_path, max_retries=2)) as client:
        with pytest.raises(CallFailed, match="after 3 attempt"):
            client.chat_sync(user("hi"))
        (row,) = client.store.rows()
    assert len(server.chat_requests) == 3 and row["status"] == "failed" and "HTTP 503" in row["error"]


def test_rejected_request_is_not_retried(server, tmp_path):
    server.chat_script += [status(401)]
    with closing(make_client(server, tmp_path)) as client:
        with pytest.raises(RequestRejected, match="HTTP 401.*check the API key"):
            client.chat_sync(user("hi"))
    assert len(server.chat_requests) == 1


def test_request_timeout_stops_a_hung_connection_and_retries(server, tmp_path):
    server.chat_script += [hang(), reply("after the hang")]
    with closing(make_client(server, tmp_path, request_timeout=1.0, max_retries=1)) as client:
        started = time.perf_counter()
        got = client.chat_sync(user("hi"))
        elapsed = time.perf_counter() - started
        (row,) = client.store.rows()
    assert got.text == "after the hang" and "no reply within 1 s" in row["error"]
    assert elapsed < 10  # the hung request is held until the server closes: only the timeout ends it


def test_request_timeout_covers_a_slow_reply(server, tmp_path):
    server.chat_script += [slow(30.0), slow(30.0)]
    with closing(make_client(server, tmp_path, request_timeout=1.5, max_retries=1)) as client:
        with pytest.raises(CallFailed, match="no reply within 1.5 s"):
            client.chat_sync(user("hi"))
        (row,) = client.store.rows()
    assert row["attempts"] == 2 and row["status"] == "failed"


def test_deadline_bounds_a_call_across_retries(server, tmp_path):
    server.chat_script += [hang()] * 10
    with closing(make_client(server, tmp_path, request_timeout=60.0, deadline=2.5, max_retries=10)) as client:
        started = time.perf_counter()
        with pytest.raises(CallFailed, match="deadline of 2.5 s"):
            client.chat_sync(user("hi"))
        assert time.perf_counter() - started < 10
        (row,) = client.store.rows()
    assert row["attempts"] == 1  # the first attempt was cut at the deadline, not at its 60 s timeout


def test_backoff_is_jittered_exponential_and_honours_retry_after(server):
    with closing(make_client(server, backoff_base=1.0, backoff_max=8.0)) as client:
        client._rng = random.Random(7)
        for retry, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 8.0)]:
            delays = [client._backoff(retry, None) for _ in range(200)]
            assert all(0.0 <= d <= cap for d in delays)
            assert max(delays) > 0.8 * cap and min(delays) < 0.2 * cap  # spread over the whole range
        assert all(client._backoff(0, 3.0) >= 3.0 for _ in range(20))  # Retry-After is a floor
        assert client._backoff(0, 100.0) == 8.0                         # capped by backoff_max


def test_circuit_breaker_stops_with_a_record_and_without_more_requests(server, tmp_path):
    server.chat_script += [status(500)] * 4
    with closing(make_client(server, tmp_path, max_retries=1, breaker_failures=2)) as client:
        with pytest.raises(CallFailed):
            client.chat_sync(user("one"))
        with pytest.raises(EndpointDown, match="2 calls failed in a row"):
            client.chat_sync(user("two"))
        sent = len(server.chat_requests)
        with pytest.raises(EndpointDown):
            client.chat_sync(user("three"))
        rows = client.store.rows()
    assert sent == 4 and len(server.chat_requests) == 4
    assert [r["status"] for r in rows] == ["failed", "failed"]
    assert "down" in rows[-1]["error"] and "2 calls failed in a row" in rows[-1]["error"]


def test_success_resets_the_breaker(server):
    server.chat_script += [status(500), reply("fine"), status(500), reply("fine")]
    with closing(make_client(server, max_retries=0, breaker_failures=2)) as client:
        for _ in range(2):
            with pytest.raises(CallFailed):
                client.chat_sync(user("a"))
            assert client.chat_sync(user("b")).text == "fine"


# ------------------------------------------------------------------ concurrency
def test_concurrency_is_bounded(server):
    server.responder = lambda body: slow(0.15, "done")
    with closing(make_client(server, max_concurrency=2)) as client:
        async def many():
            return await asyncio.gather(*(client.chat(user(f"q{i}")) for i in range(6)))
        replies = asyncio.run(many())
    assert [r.text for r in replies] == ["done"] * 6
    assert server.max_in_flight == 2


# ------------------------------------------------------------------ accounting and caps
def test_usage_per_call_role_and_architecture(server, tmp_path):
    server.chat_script += [reply("a", usage=(10, 3)), reply("b", usage=(20, 5)), reply("c", usage=(1, 1))]
    config = LLMConfig(base_url=server.base_url, model="gpt-4o-mini", backoff_base=0.01)
    with closing(LLMClient.from_config(config, store=tmp_path)) as client:
        first = client.chat_sync(user("x"), role="proposer", arch_id="a1")
        client.chat_sync(user("y"), role="modifier", arch_id="a1")
        client.chat_sync(user("z"), role="modifier", arch_id="a2")
        usage = client.usage.as_dict()
        rows = client.store.rows()
    assert (first.prompt_tokens, first.completion_tokens) == (10, 3)
    assert first.cost_usd == pytest.approx((10 * 0.15 + 3 * 0.60) / 1e6)
    assert usage["total"]["prompt_tokens"] == 31 and usage["total"]["completion_tokens"] == 9
    assert usage["by_role"]["modifier"]["calls"] == 2 and usage["by_role"]["proposer"]["total_tokens"] == 13
    assert usage["by_arch"]["a1"]["total_tokens"] == 38 and usage["by_arch"]["a2"]["total_tokens"] == 2
    assert usage["total"]["cost_usd"] == pytest.approx((31 * 0.15 + 9 * 0.60) / 1e6)
    assert [(r["role"], r["arch_id"], r["prompt_tokens"]) for r in rows] == \
           [("proposer", "a1", 10), ("modifier", "a1", 20), ("modifier", "a2", 1)]


def test_token_cap_stops_before_the_call_that_could_pass_it(server, tmp_path):
    server.responder = lambda body: reply("x" * 40, usage=(50, 100))
    # 150 characters: a prompt estimated at 55 tokens, so 50 + 100 stays within each reservation
    with closing(make_client(server, tmp_path, max_tokens=100, max_total_tokens=400)) as client:
        client.chat_sync(user("a" * 150))
        client.chat_sync(user("b" * 150))
        with pytest.raises(BudgetExceeded) as stop:
            client.chat_sync(user("c" * 150))
        spent = client.ledger.spent_tokens
    assert stop.value.kind == "tokens" and spent == 300 <= 400
    assert len(server.chat_requests) == 2
    assert str(stop.value).count("run again to resume") == 1
    assert stop.value.reason == "token cap reached: 300 tokens spent of the 400 cap; the next call may take up to 155"


def test_cost_cap_holds_under_concurrency_and_resumes_with_a_higher_cap(server, tmp_path):
    server.responder = lambda body: reply("ok", delay=0.05, usage=(0, 1000))
    settings = dict(model="priced", max_tokens=1000, max_concurrency=4)
    # 1000 completion tokens at $1000/M = $1 per call at most; a $3.50 cap allows 3 calls in flight.
    toml = tmp_path / "c.toml"
    toml.write_text('[llm.prices."priced"]\ninput = 0\noutput = 1000\n')
    prices = load_config(toml).prices
    with closing(make_client(server, tmp_path / "run", prices=prices, max_cost_usd=3.5, **settings)) as client:
        async def many():
            return await asyncio.gather(*(client.chat(user(f"q{i}")) for i in range(8)), return_exceptions=True)
        outcomes = asyncio.run(many())
        spent = client.ledger.spent_cost
    stopped = [o for o in outcomes if isinstance(o, BudgetExceeded)]
    assert len(stopped) == 5 and sum(not isinstance(o, Exception) for o in outcomes) == 3
    assert spent == pytest.approx(3.0)
    # A second session of the same run counts the first one's spend ...
    with closing(make_client(server, tmp_path / "run", prices=prices, max_cost_usd=3.5, **settings)) as again:
        assert again.ledger.spent_cost == pytest.approx(spent)
        assert again.chat_sync(user("q0")).source == "cache"  # an answered call is free
        with pytest.raises(BudgetExceeded):
            again.chat_sync(user("new question"))
    # ... and resumes under a higher cap.
    with closing(make_client(server, tmp_path / "run", prices=prices, max_cost_usd=10, **settings)) as resumed:
        assert resumed.chat_sync(user("new question")).source == "endpoint"


# ------------------------------------------------------------------ record, cache, replay
def test_every_call_is_recorded(server, tmp_path):
    server.chat_script += [reply("rec", usage=(7, 2))]
    with closing(make_client(server, tmp_path, temperature=0.5, api_key="sk-secret-123")) as client:
        client.chat_sync(user("remember me"), role="reader.relevance", prompt="reader_relevance.v1", json=True)
    import sqlite3
    conn = sqlite3.connect(tmp_path / "runs.sqlite")
    conn.row_factory = sqlite3.Row
    (row,) = conn.execute("SELECT * FROM llm_calls").fetchall()
    request = json.loads(row["request"])
    assert row["model"] == "local-model" and row["role"] == "reader.relevance" and row["prompt"] == "reader_relevance.v1"
    assert request["messages"] == user("remember me")
    assert request["params"]["temperature"] == 0.5 and request["params"]["response_format"] == {"type": "json_object"}
    assert json.loads(row["reply"]) == {"text": "rec", "finish_reason": "stop"}
    assert (row["prompt_tokens"], row["completion_tokens"], row["status"], row["source"]) == (7, 2, "ok", "endpoint")
    assert row["latency_s"] > 0 and row["key"] and row["attempts"] == 1
    assert '"model":"local-model"' in conn.execute("SELECT value FROM meta WHERE key='llm_config'").fetchone()[0]
    assert not any("sk-secret-123" in str(v) for table in ("meta", "llm_calls")
                   for r in conn.execute(f"SELECT * FROM {table}") for v in r)  # the key is never recorded


def test_identical_calls_are_answered_from_the_record_in_order(server, tmp_path):
    server.chat_script += [reply("first"), reply("second")]
    with closing(make_client(server, tmp_path)) as client:
        # Asked twice in one session, an identical request is sampled twice ...
        assert [client.chat_sync(user("same")).text for _ in range(2)] == ["first", "second"]
    with closing(make_client(server, tmp_path)) as client:
        # ... and a later session gets both recorded replies, in order, without a request.
        again = [client.chat_sync(user("same")) for _ in range(2)]
        assert client.usage.total.recorded_calls == 2 and client.usage.total.calls == 0
    assert [(r.text, r.source) for r in again] == [("first", "cache"), ("second", "cache")]
    assert len(server.chat_requests) == 2


def test_replay_needs_no_endpoint_and_fails_loudly_on_a_miss(tmp_path):
    with LoopbackServer() as srv:
        srv.chat_script += [reply("one"), reply("two")]
        with closing(make_client(srv, tmp_path / "recorded", temperature=0.2)) as client:
            client.chat_sync(user("q1"), role="proposer")
            client.chat_sync(user("q2"), role="proposer")
    # The server is gone; the replay has no base_url at all.
    config = LLMConfig(model="local-model", temperature=0.2)
    with closing(LLMClient.from_config(config, store=tmp_path / "replayed", replay=tmp_path / "recorded")) as client:
        assert client.chat_sync(user("q1"), role="proposer").text == "one"
        got = client.chat_sync(user("q2"), role="proposer")
        assert (got.text, got.source) == ("two", "replay")
        with pytest.raises(ReplayMiss, match=r"nearest .* differs in: messages\[0\]\.content"):
            client.chat_sync(user("q3"), role="proposer")
        with pytest.raises(ReplayMiss, match="differs in: params.temperature"):
            client.chat_sync(user("q1"), role="proposer", temperature=0.9)
        assert [r["source"] for r in client.store.rows()] == ["replay", "replay"]
    # A replayed run is itself a record that replays.
    with closing(LLMClient.from_config(config, replay=tmp_path / "replayed")) as client:
        assert client.chat_sync(user("q1"), role="proposer").text == "one"


def test_rejected_reply_is_asked_again_in_the_run_but_replayed_as_it_was(server, tmp_path):
    server.chat_script += [reply("not json"), reply('{"a": 1}')]
    with closing(make_client(server, tmp_path / "run")) as client:
        bad = client.chat_sync(user("give json"))
        client.reject(bad, "not JSON")
    with closing(make_client(server, tmp_path / "run")) as client:
        assert client.chat_sync(user("give json")).text == '{"a": 1}'  # asked again
    config = LLMConfig(model="local-model")
    with closing(LLMClient.from_config(config, replay=tmp_path / "run")) as client:
        assert client.chat_sync(user("give json")).text == "not json"   # the recorded sequence


def test_truncated_reply_is_flagged(server):
    server.chat_script += [truncated('{"ideas": ["cut')]
    with closing(make_client(server)) as client:
        got = client.chat_sync(user("long"))
    assert got.truncated and got.finish_reason == "length"


# ------------------------------------------------------------------ embeddings
def test_embeddings_are_batched_recorded_and_replayed(server, tmp_path, monkeypatch):
    import nader.agents.llm.client as client_module

    monkeypatch.setattr(client_module, "EMBED_BATCH", 3)
    texts = [f"idea {i}" for i in range(7)]
    with closing(make_client(server, tmp_path, embedding_model="embedder")) as client:
        vectors = client.embed_sync(texts)
        usage = client.usage.by_role["embed"]
    from loopback import fake_vector
    assert len(vectors) == 7
    assert vectors == [pytest.approx(fake_vector(t), abs=1e-7) for t in texts]
    embed_requests = [b for p, b in server.requests if p.endswith("/embeddings")]
    assert sorted(len(b["input"]) for b in embed_requests) == [1, 3, 3]
    assert usage.calls == 3 and usage.prompt_tokens == 14
    config = LLMConfig(embedding_model="embedder")
    with closing(LLMClient.from_config(config, replay=tmp_path)) as replayed:
        assert replayed.embed_sync(texts) == vectors


def test_embedding_server_errors_are_retried(server):
    server.embed_script += [status(500)]
    with closing(make_client(server, embedding_model="embedder")) as client:
        assert len(client.embed_sync(["a", "b"])) == 2
    assert len([p for p, _ in server.requests if p.endswith("/embeddings")]) == 2


# ------------------------------------------------------------------ the network guard
def test_guard_catches_a_call_that_would_leave_the_machine(no_outside_network):
    config = LLMConfig(base_url="http://192.0.2.1/v1", model="m", max_retries=0, request_timeout=2, deadline=2)
    with closing(LLMClient.from_config(config)) as client:
        with pytest.raises(CallFailed):
            client.chat_sync(user("hi"))
    assert no_outside_network == [("192.0.2.1", 80)] * 2  # GET /models (the model name check), then the call
    no_outside_network.clear()  # expected here; every other test must end with none
