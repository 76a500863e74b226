"""A profile's `max_tokens`: the reply cap `llm check` writes for a server too slow to finish a
full reply within the request timeout. It lowers `[llm] max_tokens` for that model only, never
raises a caller's smaller limit, and survives `--write` and loading."""
from __future__ import annotations

import asyncio
from contextlib import closing

import pytest

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.llm.config import load_config
from nader.agents.llm.errors import LLMConfigError
from nader.agents.llm.profile_file import write_profile
from nader.agents.llm.profiles import ModelProfile


def sent_limits(server, tmp_path, profiles, asks):
    server.responder = lambda body: reply("ok")
    with closing(make_client(server, tmp_path, profiles=profiles, max_tokens=4096)) as client:
        async def ask():
            for i, asked in enumerate(asks):
                await client.chat(user(f"question {i}"), max_tokens=asked)
            await client.aclose()  # this loop's connections, before the loop ends
        asyncio.run(ask())
        return [body["max_tokens"] for body in server.chat_requests[-len(asks):]]


def test_the_cap_lowers_the_configured_limit_for_its_model_only(server, tmp_path):
    capped = (ModelProfile("local-model", max_tokens=1280),)
    assert sent_limits(server, tmp_path / "a", capped, [None, 300, 9000]) == [1280, 300, 1280]
    other = (ModelProfile("another-model", max_tokens=1280),)
    assert sent_limits(server, tmp_path / "b", other, [None]) == [4096]


def test_the_cap_is_written_and_loads_back(tmp_path):
    path = tmp_path / "nader.toml"
    path.write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\n', encoding="utf-8")
    write_profile(path, ModelProfile("gemma-3-270m", json="none", system="merge", max_tokens=2560))
    assert "max_tokens = 2560" in path.read_text(encoding="utf-8")
    (profile,) = [p for p in load_config(path).profiles if p.pattern == "gemma-3-270m"]
    assert profile.max_tokens == 2560 and profile.system == "merge"


@pytest.mark.parametrize("value", ["0", "-5", "true", '"2k"'])
def test_a_bad_cap_is_a_configuration_error(tmp_path, value):
    path = tmp_path / "nader.toml"
    path.write_text(f'[llm.profiles."m"]\nmax_tokens = {value}\n', encoding="utf-8")
    with pytest.raises(LLMConfigError, match="max_tokens must be a positive number of tokens"):
        load_config(path)


def test_prompts_are_sized_for_the_capped_reply(server, tmp_path):
    from nader.agents.context_fit import client_room

    skeleton = [{"role": "user", "content": "x" * 300}]
    capped = (ModelProfile("local-model", context=2048, max_tokens=256),)
    with closing(make_client(server, tmp_path / "a", profiles=capped, max_tokens=4096)) as client:
        assert client.window() == (2048, 256)
        room = client_room(client, skeleton)
    uncapped = (ModelProfile("local-model", context=2048),)
    with closing(make_client(server, tmp_path / "b", profiles=uncapped, max_tokens=4096)) as client:
        assert client.window() == (2048, 4096)
        assert client_room(client, skeleton) == 0  # a 4,096-token reply alone overflows the window
    # the room left beside a 256-token reply: the window less the reply and the 300-character skeleton
    assert 3 * (2048 - 256) - 400 < room <= 3 * (2048 - 256) - 300
