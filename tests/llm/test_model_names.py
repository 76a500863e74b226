"""The model name against what the server serves: a name GET /models does not list, or a reply
under another name, is warned about once per model and recorded in the run; a server without a
list is not judged; record and replay never ask. Loopback server only (the guard)."""
from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import LoopbackServer
from nader.agents.llm import LLMClient, LLMConfig
from nader.agents.llm.served import answered_as_other, is_listed

GEMMA = [{"id": "gemma-3-270m", "object": "model"}]


def meta(run_dir, key: str = "model_name"):
    with closing(sqlite3.connect(run_dir / "runs.sqlite")) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else json.loads(row[0])


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "nader.llm" and r.levelno >= logging.WARNING]


def test_a_mistyped_model_is_warned_about_once_and_recorded(tmp_path, caplog):
    with LoopbackServer(models=GEMMA) as srv, closing(make_client(srv, tmp_path, model="gemma-3-270mm")) as client:
        with caplog.at_level(logging.WARNING, logger="nader.llm"):
            replies = [client.chat_sync(user(f"call {i}")) for i in range(3)]
        listings, calls = srv.model_listings, len(srv.chat_requests)
        findings = client.model_name_findings
    assert [r.text for r in replies] == ["ok"] * 3 and calls == 3
    assert listings == 1
    (warned,) = warnings(caplog)
    assert warned == ("warning: model 'gemma-3-270mm' is not among the models the server lists (gemma-3-270m);"
                      " profiles and prices are chosen by the name you give: pass --llm-model gemma-3-270m")
    recorded = meta(tmp_path)
    assert recorded["gemma-3-270mm"]["finding"] == "not_listed"
    assert recorded["gemma-3-270mm"]["listed"] == ["gemma-3-270m"]
    assert findings == recorded


def test_concurrent_first_calls_list_the_models_once_and_warn_once(tmp_path, caplog):
    async def three(client):
        try:
            return await asyncio.gather(*(client.chat(user(f"call {i}")) for i in range(3)))
        finally:
            await client.aclose()

    with LoopbackServer(models=GEMMA) as srv, \
            closing(make_client(srv, tmp_path, model="gemma-3-270mm", max_concurrency=3)) as client:
        with caplog.at_level(logging.WARNING, logger="nader.llm"):
            asyncio.run(three(client))
        listings = srv.model_listings
    assert listings == 1 and len(warnings(caplog)) == 1


def test_a_listed_model_gives_no_warning(server, tmp_path, caplog):
    with closing(make_client(server, tmp_path)) as client, caplog.at_level(logging.WARNING, logger="nader.llm"):
        client.chat_sync(user("first"))
        client.chat_sync(user("second"))
        assert client.model_name_findings == {}
    assert server.model_listings == 1
    assert warnings(caplog) == [] and meta(tmp_path) is None


@pytest.mark.parametrize("listing", [dict(models=None), dict(models_status=500), dict(models_status=401),
                                     dict(models=[])])
def test_a_server_without_a_model_list_is_not_judged(tmp_path, caplog, listing):
    with LoopbackServer(**listing) as srv, closing(make_client(srv, tmp_path, model="anything")) as client, \
            caplog.at_level(logging.WARNING, logger="nader.llm"):
        got = client.chat_sync(user("hi"))
        again = client.chat_sync(user("again"))
        listings = srv.model_listings
    assert got.text == again.text == "ok" and got.source == "endpoint"
    assert listings == 1  # asked once, not again on every call
    assert warnings(caplog) == [] and meta(tmp_path) is None


def test_record_and_replay_never_list_the_models(tmp_path, caplog):
    recorded, replayed = tmp_path / "rec", tmp_path / "rep"
    with LoopbackServer(models=GEMMA) as srv:
        with closing(make_client(srv, recorded, model="gemma-3-270mm")) as client:
            client.chat_sync(user("hi"))
        assert srv.model_listings == 1 and len(warnings(caplog)) == 1
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="nader.llm"):
            with closing(make_client(srv, recorded, model="gemma-3-270mm")) as resumed:
                cached = resumed.chat_sync(user("hi"))
            config = LLMConfig(base_url=srv.base_url, model="gemma-3-270mm")
            with closing(LLMClient.from_config(config, store=replayed, replay=recorded)) as replaying:
                again = replaying.chat_sync(user("hi"))
        listings, calls = srv.model_listings, len(srv.chat_requests)
    assert cached.source == "cache" and again.source == "replay"
    assert listings == 1 and calls == 1
    assert warnings(caplog) == []
    assert "gemma-3-270mm" in meta(recorded)  # the resumed session kept what the first one found
    assert meta(replayed) == meta(recorded)   # and a replay carries it into its own record


def test_a_reply_under_another_name_is_warned_about_once(tmp_path, caplog):
    with LoopbackServer(models=None, answer_as="gemma-3-270m") as srv, \
            closing(make_client(srv, tmp_path, model="gemma-3-270mm")) as client, \
            caplog.at_level(logging.WARNING, logger="nader.llm"):
        client.chat_sync(user("first"))
        client.chat_sync(user("second"))
    (warned,) = warnings(caplog)
    assert warned == ("warning: the server answered a request for model 'gemma-3-270mm' as model 'gemma-3-270m';"
                      " profiles and prices are chosen by the name you give: pass --llm-model gemma-3-270m")
    assert meta(tmp_path)["gemma-3-270mm"]["answered_as"] == "gemma-3-270m"


def test_a_dated_snapshot_of_the_model_is_the_model(tmp_path, caplog):
    with LoopbackServer(models=[{"id": "gpt-4o"}], answer_as="gpt-4o-2024-08-06") as srv, \
            closing(make_client(srv, tmp_path, model="gpt-4o")) as client, \
            caplog.at_level(logging.WARNING, logger="nader.llm"):
        client.chat_sync(user("hi"))
    assert warnings(caplog) == [] and meta(tmp_path) is None


def test_an_unlisted_embedding_model_names_its_own_flag(server, tmp_path, caplog):
    config = LLMConfig(base_url=server.base_url, embedding_model="embedder", request_timeout=5.0)
    with closing(LLMClient.from_config(config, store=tmp_path)) as client, \
            caplog.at_level(logging.WARNING, logger="nader.llm"):
        client.embed_sync(["one", "two"])
        client.embed_sync(["three"])
    (warned,) = warnings(caplog)
    assert "model 'embedder' is not among the models the server lists (local-model)" in warned
    assert warned.endswith("pass --embedding-model local-model")


@pytest.mark.parametrize("model, listed, expected", [
    ("gemma-3-270m-it-Q8_0", ["/models/gemma-3-270m-it-Q8_0.gguf"], True),  # llama.cpp lists the file
    ("llama3.2", ["llama3.2:latest", "qwen2.5:7b"], True),                 # Ollama's default tag
    ("Qwen2.5-7B", ["qwen2.5-7b"], True),
    ("llama3.2", ["llama3.2:1b"], False),
    ("gemma-3-270mm", ["gemma-3-270m"], False),
])
def test_names_as_servers_list_them(model, listed, expected):
    assert is_listed(model, listed) is expected


@pytest.mark.parametrize("asked, answered, other", [
    ("gpt-4o", "gpt-4o-2024-08-06", False), ("gpt-4", "gpt-4-0613", False),
    ("claude-3-5-sonnet", "claude-3-5-sonnet-20241022", False), ("llama3.2", "llama3.2:latest", False),
    ("gpt-4o", "gpt-4o-mini", True), ("gemma-3-270m", "gemma-3-270mm", True), ("a", None, False),
])
def test_reply_names_that_are_another_model(asked, answered, other):
    assert answered_as_other(asked, answered) is other


def test_a_command_prints_the_warning_once_on_stderr(server, tmp_path):
    """In a process of its own: where no logging is set up, the warning reaches stderr."""
    from test_kb_endpoint_cli import POOL

    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(POOL))
    argv = ["kb", "import", str(pool), "--kb", str(tmp_path / "kb"), "--llm-base-url", server.base_url,
            "--embedding-model", "embedder"]
    done = subprocess.run([sys.executable, "-c", "import sys; from nader.cli import main; sys.exit(main())", *argv],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = [line for line in done.stderr.splitlines() if "not among the models the server lists" in line]
    assert printed == ["warning: model 'embedder' is not among the models the server lists (local-model); profiles"
                       " and prices are chosen by the name you give: pass --embedding-model local-model"]
