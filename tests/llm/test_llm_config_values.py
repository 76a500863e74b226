"""Caps, timeouts and the temperature refuse NaN, infinities and non-positive values, and a
base_url that is no URL is refused up front, from a TOML file, a flag or search.toml alike (issue
30, points 14-15): one line naming where, exit 2, nothing sent."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.llm import LLMConfigError
from nader.agents.llm.config import load_config
from nader.cli import main
from test_llm_faults import SEARCH_TOML

BAD_TOML = [("max_cost_usd", "nan"), ("max_cost_usd", "inf"), ("max_cost_usd", "0"), ("max_cost_usd", "-1.5"),
            ("request_timeout", "nan"), ("request_timeout", "inf"), ("request_timeout", "0"), ("deadline", "-inf"),
            ("temperature", "nan"), ("temperature", "inf"), ("temperature", "-0.5"), ("backoff_max", "nan"),
            ("max_total_tokens", "0"), ("base_url", '"http://[::1"'), ("base_url", '"http://"'),
            ("base_url", '"http://localhost:99999/v1"')]


@pytest.mark.parametrize("key,value", BAD_TOML, ids=[f"{k}={v}" for k, v in BAD_TOML])
def test_a_value_that_cannot_work_is_refused_naming_the_file_and_key(tmp_path, key, value):
    path = tmp_path / "llm.toml"
    path.write_text(f"[llm]\n{key} = {value}\n")
    with pytest.raises(LLMConfigError) as error:
        load_config(path)
    assert str(path) in str(error.value) and key in str(error.value)


def test_good_values_still_load(tmp_path):
    path = tmp_path / "llm.toml"
    path.write_text('[llm]\nbase_url = "http://[::1]:8080/v1"\nmax_cost_usd = 0.5\nrequest_timeout = 30\n'
                    "temperature = 0\n")
    config = load_config(path)
    assert config.max_cost_usd == 0.5 and config.temperature == 0.0 and config.base_url == "http://[::1]:8080/v1"


FLAGS = [("--llm-max-cost", "nan"), ("--llm-max-cost", "inf"), ("--llm-timeout", "nan"), ("--llm-deadline", "inf"),
         ("--llm-base-url", "http://[::1")]


@pytest.mark.parametrize("flag,value", FLAGS, ids=[f"{f}={v}" for f, v in FLAGS])
def test_a_flag_that_cannot_work_stops_the_run_before_any_call(server, tmp_path, flag, value):
    (tmp_path / "search.toml").write_text(SEARCH_TOML)
    args = ["run", str(tmp_path / "search.toml"), "--strategy", "genius", "--llm-model", "m",
            "--run-dir", str(tmp_path / "run")]
    if flag != "--llm-base-url":
        args += ["--llm-base-url", server.base_url]
    result = CliRunner().invoke(main, [*args, flag, value])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    assert flag in result.output and server.chat_requests == []


@pytest.mark.parametrize("line", ["llm-max-cost = nan", "llm-max-cost = inf", "llm-max-cost = -1"])
def test_a_cap_in_search_toml_that_cannot_work_is_refused(server, tmp_path, line):
    (tmp_path / "search.toml").write_text(SEARCH_TOML.replace("[train]", f"{line}\n[train]"))
    result = CliRunner().invoke(main, ["run", str(tmp_path / "search.toml"), "--strategy", "genius", "--llm-model",
                                       "m", "--llm-base-url", server.base_url, "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "llm-max-cost" in result.output and server.chat_requests == []
