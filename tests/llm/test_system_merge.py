"""The system message against servers whose chat template has no system role: the `system`
profile key, the client noticing a dropped system message from the usage, and JSON mode as a
profile setting. Loopback server only (the guard)."""
from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import LoopbackServer
from nader.agents.llm import LLMClient, LLMConfig, LLMConfigError
from nader.agents.llm.config import load_config
from nader.agents.llm.profiles import BUILTIN_PROFILES, match_profile, merge_system, system_tokens_at_least

# About 3 KB of instructions, like the Modifier's language reference.
SYSTEM = "You write blocks in the NADER language. " + " ".join(f"Rule {i}: every layer states its shape." for i in range(80))
DOCS = Path(__file__).resolve().parents[2] / "docs" / "llm.md"


def asking(text: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, *user(text)]


def roles(body: dict) -> list[str]:
    return [m["role"] for m in body["messages"]]


def meta(run_dir, key: str):
    with closing(sqlite3.connect(run_dir / "runs.sqlite")) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


# ------------------------------------------------------------------ merging
def test_merge_folds_the_system_text_into_the_first_user_message():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
                {"role": "assistant", "content": "A"}, {"role": "user", "content": "U2"}]
    assert merge_system(messages) == [{"role": "user", "content": "S\n\nU1"}, {"role": "assistant", "content": "A"},
                                      {"role": "user", "content": "U2"}]
    assert merge_system([{"role": "system", "content": "S"}]) == [{"role": "user", "content": "S"}]
    assert merge_system(user("U")) == user("U")


def test_token_bound_counts_a_run_of_one_character_once():
    assert system_tokens_at_least("abcdef" * 10) == 10
    assert system_tokens_at_least("-" * 600 + "abcde") == 1


# ------------------------------------------------------------------ noticing a dropped system message
def test_server_dropping_the_system_message_is_noticed_once_and_merged_from_then_on(tmp_path, caplog):
    with LoopbackServer(usage="no_system") as srv, closing(make_client(srv, tmp_path)) as client:
        with caplog.at_level(logging.WARNING, logger="nader.llm"):
            first = client.chat_sync(asking("first"), role="modifier")
            client.chat_sync(asking("second"), role="modifier")
        bodies = srv.chat_requests
        rows = client.store.rows()
    assert len(bodies) == 3  # the dropped request, asked again merged, then the next call merged
    assert roles(bodies[0]) == ["system", "user"]
    for body, text in ((bodies[1], "first"), (bodies[2], "second")):
        assert roles(body) == ["user"] and body["messages"][0]["content"] == f"{SYSTEM}\n\n{text}"
    warnings = [r.getMessage() for r in caplog.records if "dropped the system message" in r.getMessage()]
    assert len(warnings) == 1 and "switching to system=merge" in warnings[0]
    assert re.search(r"prompt_tokens \d+ for a system text of about \d+ tokens", warnings[0])
    assert first.call_id == rows[1]["call_id"]  # the reply written without instructions is not the one used
    assert rows[0]["status"] == "rejected" and "dropped the system message" in rows[0]["error"]
    assert "local-model" in meta(tmp_path, "system_merge")
    assert "local-model" in client.system_merged


def test_concurrent_calls_each_end_merged_with_one_warning(tmp_path, caplog):
    async def three(client):
        try:
            return await asyncio.gather(*(client.chat(asking(f"call {i}")) for i in range(3)))
        finally:
            await client.aclose()

    with LoopbackServer(usage="no_system") as srv, closing(make_client(srv, tmp_path, max_concurrency=3)) as client:
        with caplog.at_level(logging.WARNING, logger="nader.llm"):
            replies = asyncio.run(three(client))
        merged = [b for b in srv.chat_requests if roles(b) == ["user"]]
    assert sorted(b["messages"][0]["content"].rsplit("\n\n", 1)[1] for b in merged) == ["call 0", "call 1", "call 2"]
    assert all(r.call_id is not None for r in replies)
    assert len([r for r in caplog.records if "dropped the system message" in r.getMessage()]) == 1


def test_a_resumed_run_merges_from_its_first_call(tmp_path):
    with LoopbackServer(usage="no_system") as srv:
        with closing(make_client(srv, tmp_path)) as client:
            client.chat_sync(asking("first"))
        with closing(make_client(srv, tmp_path)) as resumed:
            resumed.chat_sync(asking("third"))
        bodies = srv.chat_requests
    assert len(bodies) == 3 and roles(bodies[2]) == ["user"]


def test_a_replay_of_a_switched_run_reproduces_it(tmp_path):
    recorded, replayed = tmp_path / "rec", tmp_path / "rep"
    with LoopbackServer(usage="no_system") as srv, closing(make_client(srv, recorded)) as client:
        original = client.chat_sync(asking("first"), role="modifier")
    config = LLMConfig(model="local-model")
    with closing(LLMClient.from_config(config, store=replayed, replay=recorded)) as client:
        again = client.chat_sync(asking("first"), role="modifier")
    assert again.source == "replay" and again.text == original.text
    assert "local-model" in meta(replayed, "system_merge")


def test_a_server_counting_the_system_message_triggers_nothing(server, tmp_path, caplog):
    with closing(make_client(server, tmp_path)) as client, caplog.at_level(logging.WARNING, logger="nader.llm"):
        client.chat_sync(asking("first"))
        client.chat_sync(asking("second"))
        assert client.system_merged == {}
    assert [roles(b) for b in server.chat_requests] == [["system", "user"]] * 2
    assert not caplog.records and meta(tmp_path, "system_merge") is None


def test_a_server_without_usage_triggers_nothing(tmp_path, caplog):
    with LoopbackServer(usage="none") as srv, closing(make_client(srv, tmp_path)) as client, \
            caplog.at_level(logging.WARNING, logger="nader.llm"):
        client.chat_sync(asking("first"))
        client.chat_sync(asking("second"))
        bodies = srv.chat_requests
    assert [roles(b) for b in bodies] == [["system", "user"]] * 2
    assert not caplog.records


def test_a_merge_profile_sends_merged_messages_from_the_first_call(server, tmp_path):
    path = tmp_path / "nader.toml"
    path.write_text(f'[llm]\nbase_url = "{server.base_url}"\nmodel = "house-model"\n'
                    '[llm.profiles."house-*"]\nsystem = "merge"\n')
    with closing(LLMClient.from_config(load_config(path))) as client:
        client.chat_sync(asking("first"))
    (body,) = server.chat_requests
    assert body["messages"] == [{"role": "user", "content": f"{SYSTEM}\n\nfirst"}]


def test_gemma_is_merged_and_asked_for_json_by_the_prompt_alone(server, tmp_path):
    with closing(make_client(server, tmp_path, model="gemma-3-270m-it")) as client:
        client.chat_sync(asking("first"), json=True)
    (body,) = server.chat_requests
    assert roles(body) == ["user"] and "response_format" not in body


def test_a_gguf_model_is_asked_for_json_by_the_prompt_alone(server, tmp_path):
    with closing(make_client(server, tmp_path, model="Qwen2.5-Coder-7B-Q4_K_M.gguf")) as client:
        client.chat_sync(asking("first"), json=True)
    (body,) = server.chat_requests
    assert roles(body) == ["system", "user"] and "response_format" not in body


def test_bad_system_mode_is_a_configuration_error(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[llm]\n[llm.profiles."x*"]\nsystem = "fold"\n')
    with pytest.raises(LLMConfigError, match="system must be one of native, merge"):
        load_config(path)


# ------------------------------------------------------------------ the documented table
def test_docs_profile_table_lists_the_builtin_profiles():
    text = DOCS.read_text(encoding="utf-8")
    table = text.split("### Model profiles", 1)[1].split("\n\n", 2)[2].split("\n\n", 1)[0]
    documented = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for pattern in re.findall(r"`([^`]+)`", cells[0]):
            documented[pattern] = cells[1:]
    assert set(documented) == {p.pattern for p in BUILTIN_PROFILES}
    for profile in BUILTIN_PROFILES:
        token_param, temperature, effort, json_mode, system, grammar = documented[profile.pattern]
        assert (token_param.strip("`"), temperature, effort, json_mode.strip("`"), system.strip("`"),
                grammar.strip("`")) == (
            profile.token_param, "yes" if profile.temperature else "no", "yes" if profile.reasoning_effort else "no",
            profile.json, profile.system, profile.grammar), profile.pattern
    assert match_profile("Gemma-3-270M-IT-Q8_0.gguf").system == "merge"
