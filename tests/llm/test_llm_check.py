"""`nader-search llm check` against the loopback server: a healthy server, one dropping the system
message, one refusing json_schema, one without usage, a closed port; `--write` and `--format
json`. Timings are printed by the command, never asserted."""
from __future__ import annotations

import json
import re
import socket

import pytest
from click.testing import CliRunner

from llm_fixtures import no_outside_network  # noqa: F401 (fixture)
from loopback import LoopbackServer, reply, status
from nader.agents.llm.config import load_config
from nader.agents.llm.profiles import match_profile
from nader.agents.llm import check as check_module
from nader.cli import main

SLOWER_BY_S = check_module.SLOWER_BY_S


@pytest.fixture(autouse=True)
def no_timing_verdicts(monkeypatch):
    """The loopback answers in a millisecond or two, so its jitter would decide whether a mode is
    "too slow": the server tests judge what was accepted and obeyed, never the clock."""
    monkeypatch.setattr(check_module, "SLOWER_BY_S", float("inf"))


def numbers(body: dict):
    """A reply that obeys whatever the request constrains: JSON when asked, the grammar's list."""
    extra = {k for k in ("grammar", "guided_grammar", "structured_outputs") if k in body}
    return reply("[1,2,3]" if extra else '{"n": [1, 2, 3]}')


def check(server, *args, model="local-model"):
    flags = ["--llm-base-url", server.base_url] + (["--llm-model", model] if model else [])
    result = CliRunner().invoke(main, ["llm", "check", *flags, *args], catch_exceptions=False)
    return result


def test_a_healthy_server_is_usable_as_is_and_gets_a_native_profile(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=numbers, models=[{"id": "local-model", "max_model_len": 8192}]) as srv:
        result = check(srv)
        bodies = srv.chat_requests
    assert result.exit_code == 0, result.output
    assert "usable as is" in result.output and "degradations" not in result.output
    assert "context       8192" in result.output
    assert "system        native" in result.output
    assert 'token_param = "max_tokens", json = "json_schema", system = "native"' in result.output
    assert 'grammar = "llama.cpp", context = 8192' in result.output
    assert any(b.get("stream") for b in bodies)  # time to first token is measured on a stream
    assert {b.get("response_format", {}).get("type") for b in bodies} >= {"json_schema", "json_object"}


def test_a_server_dropping_the_system_message_is_reported_and_gets_merge(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=numbers, usage="no_system") as srv:
        result = check(srv)
    assert result.exit_code == 1
    assert "system        dropped" in result.output
    assert 'system = "merge"' in result.output
    assert "drops the system message" in result.output.split("degradations")[1]


def test_a_server_refusing_json_schema_lists_it_and_recommends_json_object(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def no_schema(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return status(400)
        return numbers(body)

    with LoopbackServer(responder=no_schema) as srv:
        result = check(srv, "--format", "json")
    data = json.loads(result.output)
    assert result.exit_code == 1 and data["exit_code"] == 1
    assert data["json_modes"]["json_schema"]["accepted"] is False
    assert data["json_modes"]["json_object"]["accepted"] is True
    assert any("json_schema not accepted" in d for d in data["degradations"])
    assert data["profile"]["json"] == "json_object"


def test_a_server_without_usage_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=numbers, usage="none") as srv:
        result = check(srv)
    assert result.exit_code == 1
    assert "usage         not reported by the server" in result.output
    assert "system        unknown: not measured: the server reports no usage" in result.output


def test_a_model_name_the_server_does_not_list_is_warned_about(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=numbers, models=[{"id": "gemma-3-270m.gguf", "meta": {"n_ctx_train": 32768}}]) as srv:
        named = check(srv, model="gpt-4o")
        unnamed = check(srv, model=None)
    assert named.exit_code == 1 and "'gpt-4o' is not among the models the server lists" in named.output
    assert unnamed.exit_code == 0 and "model         gemma-3-270m.gguf" in unnamed.output
    assert "context       32768" in unnamed.output


def test_a_server_taking_only_max_completion_tokens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def new_param(body):
        return status(400) if "max_tokens" in body else numbers(body)

    with LoopbackServer(responder=new_param) as srv:
        result = check(srv, "--format", "json")
    data = json.loads(result.output)
    assert data["token_params"] == {"max_tokens": False, "max_completion_tokens": True}
    assert data["profile"]["token_param"] == "max_completion_tokens"


def test_a_closed_port_is_one_error_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = CliRunner().invoke(main, ["llm", "check", "--llm-base-url", f"http://127.0.0.1:{port}/v1",
                                       "--llm-model", "m", "--llm-timeout", "5"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "connection failed" in lines[0]
    assert "Traceback" not in result.output


def test_write_adds_a_profile_that_loads_and_keeps_the_rest_of_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "nader.toml"
    config.write_text('# my settings\n[llm]\nmodel = "other"\nmax_tokens = 1000\n\n'
                      '[llm.profiles."other*"]\njson = "none"\n\n[search]\nbudget = 3\n', encoding="utf-8")
    with LoopbackServer(responder=numbers, usage="no_system",
                        models=[{"id": "local-model", "max_model_len": 8192}]) as srv:
        first = check(srv, "--write", str(config))
        second = check(srv, "--write", str(config))  # replaces its own table, adds none
    assert first.exit_code == 1 and second.exit_code == 1
    text = config.read_text(encoding="utf-8")
    assert text.startswith('# my settings\n[llm]\nmodel = "other"') and "[search]\nbudget = 3" in text
    assert text.count('[llm.profiles."local-model"]') == 1
    loaded = load_config(config)
    assert loaded.model == "other" and loaded.max_tokens == 1000
    profile = match_profile("local-model", loaded.profiles)
    assert (profile.pattern, profile.system, profile.json) == ("local-model", "merge", "json_schema")
    assert (profile.grammar, profile.context) == ("llama.cpp", 8192)
    assert match_profile("other-7b", loaded.profiles).json == "none"


def test_write_refuses_a_file_it_cannot_merge_into_and_leaves_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "bad.toml"
    config.write_text("[llm\n", encoding="utf-8")
    with LoopbackServer(responder=numbers) as srv:
        result = check(srv, "--write", str(config))
    assert result.exit_code == 2 and result.output.startswith("error: ")
    assert config.read_text(encoding="utf-8") == "[llm\n"


@pytest.mark.parametrize("usage", ["full", "none"])
def test_json_format_parses_with_every_field(tmp_path, monkeypatch, usage):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=numbers, usage=usage) as srv:
        result = check(srv, "--format", "json")
    data = json.loads(result.output)
    assert data["model"] == "local-model" and data["listed"] == ["local-model"]
    assert set(data["json_modes"]) == {"none", "json_schema", "json_object"}
    assert set(data["grammar"]) == {"grammar", "guided_grammar", "structured_outputs"}
    assert data["usage_reported"] is (usage == "full")
    assert data["exit_code"] == result.exit_code


def test_a_constrained_mode_much_slower_per_token_is_not_recommended(monkeypatch):
    monkeypatch.setattr(check_module, "SLOWER_BY_S", SLOWER_BY_S)
    from nader.agents.llm.check import CheckReport, Probe, _recommend
    from nader.agents.llm.config import LLMConfig
    from nader.agents.llm.profiles import ModelProfile

    report = CheckReport("http://x/v1", "m[1]*.gguf", token_param="max_tokens", system="native")
    report.json_modes = {"none": Probe(True, 0.5, 32), "json_schema": Probe(False, note="HTTP 400"),
                         "json_object": Probe(True, 10.0, 32)}
    profile = _recommend(report, ModelProfile("*"), LLMConfig())
    assert profile.json == "none" and profile.system == "native"
    assert match_profile("m[1]*.gguf", (profile,)) is profile and match_profile("m1x.gguf", (profile,)) is not profile
    report.json_modes["json_object"] = Probe(True, 0.6, 32)
    assert _recommend(report, ModelProfile("*"), LLMConfig()).json == "json_object"


def test_no_endpoint_configured_is_one_error_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NADER_CONFIG", raising=False)
    result = CliRunner().invoke(main, ["llm", "check"])
    assert result.exit_code == 2 and result.output.startswith("error: no LLM endpoint configured")
    assert len(result.output.strip().splitlines()) == 1


def test_a_server_without_a_model_list_is_still_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=numbers, models=None) as srv:
        result = check(srv)
    assert result.exit_code == 0, result.output
    assert "listed        (none: GET /models failed: the endpoint rejected the request: HTTP 404" in result.output


def test_a_server_refusing_the_model_is_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=lambda body: status(404)) as srv:
        result = check(srv)
    assert result.exit_code == 2
    assert result.output.startswith("error: the endpoint refused the model") and len(result.output.splitlines()) == 1


def _measured(tokens_per_s: float, grammar_relative: float = 1.0):
    from nader.agents.llm.check import CheckReport, Probe

    report = CheckReport("http://x/v1", "slow-model", token_param="max_tokens", system="native")
    report.json_modes = {"none": Probe(True, 3.2, 32), "json_schema": Probe(False, note="HTTP 400"),
                         "json_object": Probe(False, note="HTTP 400")}
    report.grammar = {"grammar": Probe(True, 3.2 * grammar_relative, 32, obeyed=True)}
    report.tokens_per_s, report.first_token_s = tokens_per_s, 0.4
    return report


@pytest.mark.parametrize("tokens_per_s,grammar_relative", [(30.0, 1.0), (30.0, 2.5), (7.0, 1.0), (1.0, 1.0)])
def test_a_server_too_slow_for_a_full_reply_within_the_timeout_gets_a_reply_cap(tokens_per_s, grammar_relative):
    from nader.agents.llm.check import _recommend
    from nader.agents.llm.config import LLMConfig
    from nader.agents.llm.profiles import ModelProfile

    config = LLMConfig(max_tokens=4096, request_timeout=120.0)
    report = _measured(tokens_per_s, grammar_relative)
    profile = _recommend(report, ModelProfile("*"), config)
    assert profile.grammar == "llama.cpp"  # the grammar is used, so its speed is the one that counts
    speed = tokens_per_s / grammar_relative
    assert profile.max_tokens is not None and profile.max_tokens < 4096 and profile.max_tokens % 256 == 0
    if speed * 120 > 512:  # a 256-token reply fits: the cap's reply finishes within the timeout
        assert profile.max_tokens / speed + 0.4 <= 120 and (profile.max_tokens + 256) / speed > 0.5 * 120
        assert any(f"max_tokens = {profile.max_tokens} for this model" in d for d in report.degradations)
    else:  # not even that: the timeout is what must change
        assert profile.max_tokens == 256 and any("raise --llm-timeout" in d for d in report.degradations)


def test_a_server_fast_enough_for_a_full_reply_gets_no_cap():
    from nader.agents.llm.check import _recommend
    from nader.agents.llm.config import LLMConfig
    from nader.agents.llm.profiles import ModelProfile

    report = _measured(200.0)
    profile = _recommend(report, ModelProfile("*"), LLMConfig(max_tokens=4096, request_timeout=120.0))
    assert profile.max_tokens is None and report.degradations == []


def test_a_server_that_never_answers_is_exit_2_with_what_to_try(tmp_path, monkeypatch):
    from loopback import hang

    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=lambda body: hang()) as srv:
        result = check(srv, "--llm-timeout", "0.5")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "no reply within 0.5 s" in result.output and "busy with an earlier reply" in result.output


@pytest.mark.parametrize("tokens_per_s,context,reply", [(200.0, None, "block"), (200.0, 32768, "block"),
                                                        (1.0, None, "edits"), (200.0, 2048, "edits")])
def test_a_reply_cap_or_a_context_too_small_for_a_whole_block_recommends_edit_replies(tokens_per_s, context, reply,
                                                                                     tmp_path):
    from nader.agents.llm.check import _recommend
    from nader.agents.llm.config import LLMConfig, load_config
    from nader.agents.llm.profile_file import write_profile
    from nader.agents.llm.profiles import ModelProfile

    report = _measured(tokens_per_s)
    report.context_length = context
    profile = _recommend(report, ModelProfile("*"), LLMConfig(max_tokens=4096, request_timeout=120.0))
    assert profile.reply == reply and bool(report.reply_note) == (reply == "edits")
    write_profile(tmp_path / "llm.toml", profile)
    text = (tmp_path / "llm.toml").read_text()
    assert ('reply = "edits"' in text) == (reply == "edits")
    assert load_config(tmp_path / "llm.toml").profiles[0].reply == reply


def test_the_report_names_the_edit_reply_and_why():
    from nader.agents.llm.check import _recommend
    from nader.agents.llm.cli import render_check
    from nader.agents.llm.config import LLMConfig
    from nader.agents.llm.profiles import ModelProfile

    report = _measured(200.0)
    report.context_length = 2048
    report.profile = _recommend(report, ModelProfile("*"), LLMConfig(max_tokens=4096, request_timeout=120.0))
    text = render_check(report)
    assert 'grammar = "llama.cpp", context = 2048, reply = "edits"' in text
    assert "reply         a context of 2048 tokens" in text
    report.profile, report.reply_note = ModelProfile("x"), ""
    assert "reply" not in render_check(report).split("recommended", 1)[1]


@pytest.mark.parametrize("rambles", [False, True])
def test_a_model_that_restates_a_block_until_max_tokens_gets_edit_replies_and_is_small(rambles, tmp_path, monkeypatch):
    from loopback import truncated

    from nader.agents.llm.check import BLOCK_PROBE_TOKENS

    def responder(body):
        if "Rewrite this block" in body["messages"][-1]["content"]:
            return truncated("0->2\n" * 50) if rambles else reply("##Basic##\n0:input\n1:output\n4:GELU\n0->4\n4->1")
        return numbers(body)

    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=responder, models=[{"id": "local-model", "max_model_len": 8192}]) as srv:
        result = check(srv, "--write", str(tmp_path / "llm.toml"))
        probes = [b for b in srv.chat_requests if "Rewrite this block" in b["messages"][-1]["content"]]
    assert len(probes) == 1 and probes[0]["max_tokens"] == BLOCK_PROBE_TOKENS
    written = (tmp_path / "llm.toml").read_text()
    if rambles:
        assert f"did not end within {BLOCK_PROBE_TOKENS} tokens" in result.output
        assert 'reply = "edits"' in written and "# edit replies:" in written
        assert "small = true" in written  # GENIUS's prompts then ask for the cell first
    else:
        assert "a block restated with one change: ended" in result.output and "reply =" not in written
        assert "small" not in written


def _paced(body: dict):
    """A CPU server at 20 tokens/s: a plain reply takes max_tokens / 20 s; a streamed one waits 3 s
    first (the other core busy, say)."""
    from loopback import slow

    if body.get("stream"):
        return slow(3.0, "1, 2, 3")
    limit = body.get("max_tokens") or body.get("max_completion_tokens") or 16
    return reply('{"n": [1, 2, 3]}', delay=limit / 20, usage=(12, limit))


def test_a_slow_server_is_measured_with_probes_sized_to_it_and_reported_slow_not_silent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer(responder=_paced) as srv:
        result = check(srv, "--llm-timeout", "1")
        bodies = srv.chat_requests
    assert result.exit_code == 1, result.output  # degradations, not "no answer" (exit 2)
    assert "answers no chat request" not in result.output and "error:" not in result.output
    plain = [b.get("max_tokens") or b.get("max_completion_tokens") for b in bodies if not b.get("stream")]
    assert plain and max(plain) / 20 < 1, plain  # every plain probe fits the 1 s timeout at the measured pace
    assert "JSON modes\n  none                accepted" in result.output
    assert "the streamed request: no reply within 1 s, though earlier requests were answered (at about" \
           in result.output
    assert "the server is slow, not silent" in result.output and "tokens/s" in result.output
    assert re.search(r"recommended .* max_tokens = \d+", result.output), result.output


def test_a_plain_probe_timing_out_after_the_first_answer_is_slow_too(tmp_path, monkeypatch):
    from loopback import hang

    monkeypatch.chdir(tmp_path)
    answers = iter([reply("OK", usage=(12, 4))])
    with LoopbackServer(responder=lambda body: next(answers, hang())) as srv:
        result = check(srv, "--llm-timeout", "0.5")
    assert result.exit_code == 1, result.output
    assert "a request with max_completion_tokens: no reply within 0.5 s, though earlier requests were answered" \
        in result.output
    assert "not measured: an earlier request got no reply in time" in result.output
    assert "max_tokens = " in result.output


def test_the_probes_follow_llm_timeout_above_thirty_seconds():
    from nader.agents.llm.check import _Checker
    from nader.agents.llm.config import LLMConfig

    assert _Checker(LLMConfig(base_url="http://127.0.0.1:9/v1", request_timeout=90.0), 32).timeout == 90.0
