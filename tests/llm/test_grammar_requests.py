"""The reply grammar on the wire: a profile's `grammar` key puts `nadc grammar --format gbnf --reply` in the
Modifier's requests under the server's field (llama.cpp `grammar`, vLLM `structured_outputs`),
nowhere else and not at all with "none"; a bare block reply (what a grammar-constrained server
sends) verifies."""
from __future__ import annotations

import asyncio
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.llm.config import load_config
from nader.agents.llm.errors import LLMConfigError
from nader.agents.llm.profiles import ModelProfile
from nader.agents.modifier import Modifier
from test_reader import MemoryKB, TREE, papers, scripted_reader
from nader.agents.reader.reader import Reader

REPO = Path(__file__).resolve().parents[2]
BASE = (REPO / "examples" / "resnet_basic.nad").read_text().split("##ResNetBasic_stem##")[0]
GOOD = BASE.replace("4:ReLU", "4:GELU")
PLAN = "Replace the first ReLU with GELU."
GRAMMAR_KEYS = ("grammar", "guided_grammar", "structured_outputs")


def nadc_gbnf() -> str:
    result = subprocess.run([sys.executable, "-m", "nader.compiler.cli", "grammar", "--format", "gbnf", "--reply"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def modify(server, tmp_path, grammar: str):
    server.responder = lambda body: reply(GOOD)  # bare block text, no fence
    profile = ModelProfile("local-model", grammar=grammar)
    with closing(make_client(server, tmp_path, profiles=(profile,))) as client:
        return Modifier(client, rounds=1).write_block(BASE, PLAN)


def test_llama_cpp_profile_sends_the_gbnf_grammar_and_a_bare_block_verifies(server, tmp_path):
    m = modify(server, tmp_path, "llama.cpp")
    (body,) = server.chat_requests
    assert body["grammar"] == nadc_gbnf()
    assert "structured_outputs" not in body
    assert m.ok and m.first_ok and "4:GELU" in m.base_text


def test_vllm_profile_sends_structured_outputs(server, tmp_path):
    m = modify(server, tmp_path, "vllm")
    (body,) = server.chat_requests
    assert body["structured_outputs"] == {"grammar": nadc_gbnf()}
    assert "grammar" not in body
    assert m.ok


def test_without_a_grammar_profile_no_grammar_is_sent(server, tmp_path):
    m = modify(server, tmp_path, "none")
    (body,) = server.chat_requests
    assert not set(GRAMMAR_KEYS) & set(body)
    assert m.ok  # the bare block is accepted without a grammar too


def test_other_roles_never_carry_the_grammar(server, tmp_path):
    server.responder = scripted_reader
    profile = ModelProfile("local-model", grammar="llama.cpp")

    async def read(client):
        try:
            return await Reader(client, MemoryKB(), tree=TREE, make_idea=lambda *a: a).read_all(papers())
        finally:
            await client.aclose()

    client = make_client(server, tmp_path, profiles=(profile,))
    (outcome, _), stopped = asyncio.run(read(client))
    assert stopped is None and outcome.status == "added"
    assert server.chat_requests and not any(set(GRAMMAR_KEYS) & set(b) for b in server.chat_requests)


def test_profile_grammar_key_is_checked(tmp_path):
    config = tmp_path / "nader.toml"
    config.write_text('[llm.profiles."x*"]\ngrammar = "vllm"\ncontext = 8192\n', encoding="utf-8")
    (profile,) = load_config(config).profiles
    assert (profile.grammar, profile.context) == ("vllm", 8192)
    config.write_text('[llm.profiles."x*"]\ngrammar = "outlines"\n', encoding="utf-8")
    with pytest.raises(LLMConfigError, match="grammar must be one of none, llama.cpp, vllm"):
        load_config(config)
    config.write_text('[llm.profiles."x*"]\ncontext = 0\n', encoding="utf-8")
    with pytest.raises(LLMConfigError, match="context must be a positive"):
        load_config(config)


def test_profile_small_key_is_a_flag(tmp_path):
    config = tmp_path / "nader.toml"
    config.write_text('[llm.profiles."x*"]\nsmall = true\n', encoding="utf-8")
    (profile,) = load_config(config).profiles
    assert profile.small is True and ModelProfile("y").small is False
    config.write_text('[llm.profiles."x*"]\nsmall = "yes"\n', encoding="utf-8")
    with pytest.raises(LLMConfigError, match="small must be true or false"):
        load_config(config)
