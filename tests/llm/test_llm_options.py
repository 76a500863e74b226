"""The shared LLM options: config file, flags, and the recorded run's settings in replay mode."""
from __future__ import annotations

from contextlib import closing

import click
import pytest
from click.testing import CliRunner

from llm_fixtures import make_client, no_outside_network, server, user  # noqa: F401 (fixtures)
from nader.agents.llm import LLMConfigError
from nader.agents.llm.options import config_from_options, llm_options


def test_flags_override_the_config_file(tmp_path, monkeypatch):
    (tmp_path / "nader.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "from-file"\n'
                                         "max_concurrency = 3\n")
    monkeypatch.chdir(tmp_path)
    config = config_from_options(model="from-flag", max_cost_usd=None)   # ./nader.toml is read by default
    assert (config.base_url, config.model, config.max_concurrency) == ("http://127.0.0.1:1/v1", "from-flag", 3)
    other = tmp_path / "other.toml"
    other.write_text('[llm]\nmodel = "other"\n')
    assert config_from_options(config_path=str(other)).model == "other"
    with pytest.raises(LLMConfigError, match="--llm-base-url: base_url must start with http"):
        config_from_options(base_url="localhost:8000")


def test_replay_takes_the_recorded_request_settings(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with closing(make_client(server, tmp_path / "rec", model="recorded-model", temperature=0.4,
                             max_tokens=123)) as client:
        client.chat_sync(user("hi"))
    config = config_from_options(replay=str(tmp_path / "rec"))
    assert (config.model, config.temperature, config.max_tokens, config.base_url) == \
           ("recorded-model", 0.4, 123, None)
    assert config_from_options(replay=str(tmp_path / "rec"), model="flag-model").model == "flag-model"
    with pytest.raises(LLMConfigError, match="no recorded run"):
        config_from_options(replay=str(tmp_path / "nothing-here"))


def test_options_decorator_passes_every_option():
    seen = {}

    @click.command()
    @llm_options
    def command(**kwargs):
        seen.update(kwargs)

    result = CliRunner().invoke(command, ["--llm-model", "m", "--max-cost", "2.5", "--llm-concurrency", "2"])
    assert result.exit_code == 0, result.output
    assert seen["model"] == "m" and seen["max_cost_usd"] == 2.5 and seen["max_concurrency"] == 2
    config = config_from_options(**seen)
    assert (config.model, config.max_cost_usd, config.max_concurrency) == ("m", 2.5, 2)
