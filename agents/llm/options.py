"""The command-line options every LLM-using command shares, and the configuration they build.

Precedence, lowest first: built-in defaults, the config file's `[llm]` section (`--config`, else
`nader.toml` in the current directory when present), in replay mode the request settings the
recorded run used (model, parameters, profiles), then the flags.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import click

from .config import LLMConfig, check_value, config_from_mapping, load_config
from .errors import LLMConfigError
from .record import CallStore

DEFAULT_CONFIG = "nader.toml"
# What shapes a request, so what a replay must take from the recorded run to ask the same.
_REQUEST_FIELDS = ("model", "embedding_model", "temperature", "max_tokens", "reasoning_effort", "profiles")

_OPTIONS = [
    click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="NADER_CONFIG",
                 help=f"TOML file with an [llm] section [env NADER_CONFIG; default ./{DEFAULT_CONFIG} if present]."),
    click.option("--llm-base-url", "base_url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."),
    click.option("--llm-model", "model", help="Chat model name as the endpoint knows it."),
    click.option("--embedding-model", "embedding_model", help="Embedding model of the endpoint's embeddings API."),
    click.option("--max-cost", "max_cost_usd", type=click.FloatRange(min=0), help="Cap in US dollars for the run."),
    click.option("--max-tokens-total", "max_total_tokens", type=click.IntRange(min=1),
                 help="Cap on tokens (in + out) for the run."),
    click.option("--llm-timeout", "request_timeout", type=click.FloatRange(min=0, min_open=True),
                 help="Seconds per HTTP attempt."),
    click.option("--llm-deadline", "deadline", type=click.FloatRange(min=0, min_open=True),
                 help="Seconds per call, retries included."),
    click.option("--llm-concurrency", "max_concurrency", type=click.IntRange(min=1), help="Calls in flight at once."),
    click.option("--replay", "replay", type=click.Path(file_okay=False),
                 help="Answer every LLM call from this recorded run; no endpoint is used, a call it did not make is an error."),
]
_FLAGS = {"base_url": "--llm-base-url", "model": "--llm-model", "embedding_model": "--embedding-model",
          "max_cost_usd": "--max-cost", "max_total_tokens": "--max-tokens-total", "request_timeout": "--llm-timeout",
          "deadline": "--llm-deadline", "max_concurrency": "--llm-concurrency"}
OPTION_NAMES = ("config_path", "base_url", "model", "embedding_model", "max_cost_usd", "max_total_tokens",
                "request_timeout", "deadline", "max_concurrency", "replay")


def llm_options(command):
    """Decorate a click command with the LLM options (they arrive as keyword arguments: OPTION_NAMES)."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def recorded_config(replay_dir) -> dict:
    """The request settings a recorded run used (from its `meta` table)."""
    store = CallStore(replay_dir, read_only=True)
    try:
        row = store.conn.execute("SELECT value FROM meta WHERE key = 'llm_config'").fetchone()
    finally:
        store.close()
    if row is None:
        return {}
    recorded = json.loads(row[0])
    values = {k: recorded[k] for k in _REQUEST_FIELDS if k in recorded and recorded[k] not in (None, [])}
    if "profiles" in values:
        values["profiles"] = {p.pop("pattern"): p for p in values["profiles"]}
    return values


def config_from_options(config_path: Optional[str] = None, replay: Optional[str] = None, **flags) -> LLMConfig:
    """The configuration from the shared options (keyword arguments named as in OPTION_NAMES)."""
    unknown = set(flags) - set(OPTION_NAMES)
    if unknown:
        raise LLMConfigError(f"unknown LLM option(s): {', '.join(sorted(unknown))}")
    path = Path(config_path) if config_path else (Path(DEFAULT_CONFIG) if Path(DEFAULT_CONFIG).is_file() else None)
    config = load_config(path)
    if replay:
        recorded = config_from_mapping(recorded_config(replay), where=f"recorded run {replay}")
        config = dataclasses.replace(config, **{k: getattr(recorded, k) for k in _REQUEST_FIELDS
                                                if getattr(recorded, k) != getattr(LLMConfig(), k)})
    return _with_flags(config, flags)


def _with_flags(config: LLMConfig, flags: dict) -> LLMConfig:
    return dataclasses.replace(config, **{k: check_value(k, v, _FLAGS.get(k, k)) for k, v in flags.items()
                                          if v is not None})
