"""The shared LLM options: config file, flags, and the recorded run's settings in replay mode."""
from __future__ import annotations

from contextlib import closing

import click
import pytest
from click.testing import CliRunner

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from nader.agents.llm import LLMConfigError
from nader.agents.llm.cli import llm_options
from nader.agents.llm.options import config_from_options


def test_flags_override_the_config_file(tmp_path, monkeypatch):
    (tmp_path / "nader.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "from-file"\n'
                                         "max_concurrency = 3\n")
    monkeypatch.chdir(tmp_path)
    config = config_from_options(llm_model="from-flag", llm_max_cost=None)   # ./nader.toml is read by default
    assert (config.base_url, config.model, config.max_concurrency) == ("http://127.0.0.1:1/v1", "from-flag", 3)
    other = tmp_path / "other.toml"
    other.write_text('[llm]\nmodel = "other"\n')
    assert config_from_options(llm_config=str(other)).model == "other"
    with pytest.raises(LLMConfigError, match="--llm-base-url: base_url must start with http"):
        config_from_options(llm_base_url="localhost:8000")


def test_replay_takes_the_recorded_request_settings(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with closing(make_client(server, tmp_path / "rec", model="recorded-model", temperature=0.4,
                             max_tokens=123)) as client:
        client.chat_sync(user("hi"))
    config = config_from_options(replay=str(tmp_path / "rec"))
    assert (config.model, config.temperature, config.max_tokens, config.base_url) == \
           ("recorded-model", 0.4, 123, None)
    assert config_from_options(replay=str(tmp_path / "rec"), llm_model="flag-model").model == "flag-model"
    with pytest.raises(LLMConfigError, match="no recorded run"):
        config_from_options(replay=str(tmp_path / "nothing-here"))


def test_options_decorator_passes_every_option():
    seen = {}

    @click.command()
    @llm_options
    def command(**kwargs):
        seen.update(kwargs)

    result = CliRunner().invoke(command, ["--llm-model", "m", "--llm-max-cost", "2.5", "--llm-concurrency", "2",
                                          "--llm-max-tokens", "1.5k", "--llm-api-key-env", "MY_KEY"])
    assert result.exit_code == 0, result.output
    assert seen["llm_model"] == "m" and seen["llm_max_cost"] == 2.5 and seen["llm_concurrency"] == 2
    config = config_from_options(**seen)
    assert (config.model, config.max_cost_usd, config.max_concurrency, config.max_total_tokens, config.api_key_env) \
        == ("m", 2.5, 2, 1500, "MY_KEY")


@pytest.mark.parametrize("old, new, value, field, expected", [
    ("--config", "--llm-config", "other.toml", "llm_config", "other.toml"),
    ("--max-cost", "--llm-max-cost", "2.5", "llm_max_cost", 2.5),
    ("--max-tokens-total", "--llm-max-tokens", "2M", "llm_max_tokens", 2_000_000),
])
def test_old_spellings_still_work_with_a_warning(old, new, value, field, expected):
    seen = {}

    @click.command()
    @llm_options
    def command(**kwargs):
        seen.update(kwargs)

    result = CliRunner().invoke(command, [old, value])
    assert result.exit_code == 0, result.output
    assert seen[field] == expected and not any(k.startswith("old_") for k in seen)
    assert f"warning: {old} is now {new}" in result.stderr
    both = CliRunner().invoke(command, [old, value, new, value])
    assert both.exit_code == 2 and f"{old} is the old name of {new}" in both.output
    assert old not in CliRunner().invoke(command, ["--help"]).output.replace(new, "")


def test_nader_config_names_the_file_without_becoming_a_flag(tmp_path, monkeypatch):
    """$NADER_CONFIG is the config file of every LLM command, read with the configuration, not by
    click: `run` hands the flags given to its strategy, and one that takes no LLM options would
    refuse an llm_config it was never given."""
    env, flag = tmp_path / "env.toml", tmp_path / "flag.toml"
    env.write_text('[llm]\nmodel = "from-env"\n')
    flag.write_text('[llm]\nmodel = "from-flag"\n')
    monkeypatch.setenv("NADER_CONFIG", str(env))
    assert config_from_options().model == "from-env"
    assert config_from_options(llm_config=str(flag)).model == "from-flag"
    seen = {}

    @click.command()
    @llm_options
    def command(**kwargs):
        seen.update(kwargs)

    assert CliRunner().invoke(command, []).exit_code == 0
    assert seen["llm_config"] is None
