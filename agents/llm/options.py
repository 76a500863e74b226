"""The settings every LLM-using command shares, declared once (`nader.inputs.settings.Setting`):
`read`, `kb`, `bench-nad` and `nader-search run` take them with the same names, the search
strategies take the same settings as options (`llm_base_url`...), and docs/llm.md's flag table is
tested against them. Plain data: `nader.inputs.cli.options` makes their click options in the
command lines; `field` is the `LLMConfig` field each sets ("config_path", "replay": not fields).

Precedence, lowest first: built-in defaults, the config file's `[llm]` section (`--llm-config`,
else `$NADER_CONFIG`, else `nader.toml` in the current directory when present), in replay mode the request settings the
recorded run used (model, parameters, profiles), then the flags.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from nader.inputs.settings import Count, Integer, Path as PathKind, Real, Setting, Text
from nader.runtime.integrity import json_cell

from .config import LLMConfig, check_value, config_from_mapping, load_config
from .errors import LLMConfigError
from .record import CallStore

DEFAULT_CONFIG = "nader.toml"
# What shapes a request, so what a replay must take from the recorded run to ask the same.
_REQUEST_FIELDS = ("model", "embedding_model", "temperature", "max_tokens", "reasoning_effort", "profiles")

LLM_CONFIG = Setting("--llm-config", PathKind("file"), field="config_path", old=("--config",),
                     help=f"TOML file with an [llm] section [env NADER_CONFIG; default ./{DEFAULT_CONFIG} if present].")
#: the caps on a whole run: `nader-search run` hands them to its loop, not its strategy
LLM_MAX_COST = Setting("--llm-max-cost", Real(positive=True), field="max_cost_usd", old=("--max-cost",),
                       help="Cap in US dollars on the run's LLM calls; no call whose worst case could pass it is sent.")
LLM_MAX_TOKENS = Setting("--llm-max-tokens", Count("2000000 or 2M"), field="max_total_tokens",
                         old=("--max-tokens-total", "--max-tokens"),
                         help="Cap on the run's LLM tokens in + out, e.g. 2M.")
LLM_SETTINGS = (
    LLM_CONFIG,
    Setting("--llm-base-url", Text(), "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.", field="base_url"),
    Setting("--llm-model", Text(), "Chat model name as the endpoint knows it.", field="model"),
    Setting("--llm-api-key-env", Text(), field="api_key_env",
            help="Environment variable holding the API key [default: NADER_LLM_API_KEY, then OPENAI_API_KEY]."),
    Setting("--llm-timeout", Real(positive=True), "Seconds per HTTP attempt.", field="request_timeout"),
    Setting("--llm-deadline", Real(positive=True), "Seconds per call, retries included.", field="deadline"),
    Setting("--llm-concurrency", Integer(1), "Calls in flight at once.", field="max_concurrency"),
    LLM_MAX_COST,
    LLM_MAX_TOKENS,
    Setting("--embedding-model", Text(), "Embedding model of the endpoint's embeddings API.", field="embedding_model"),
    Setting("--replay", PathKind("dir"), field="replay",
            help="Answer every LLM call from this recorded run; no endpoint is used, a call it did not make is an error."),
)
RUN_CAPS = (LLM_MAX_COST, LLM_MAX_TOKENS)
OPTION_NAMES = tuple(s.name for s in LLM_SETTINGS)
_BY_NAME = {s.name: s for s in LLM_SETTINGS}
NAME_OF_FIELD = {s.field: s.name for s in LLM_SETTINGS}


def recorded_config(replay_dir) -> dict:
    """The request settings a recorded run used (from its `meta` table)."""
    store = CallStore(replay_dir, read_only=True)
    try:
        value = store.get_meta("llm_config")
    finally:
        store.close()
    if value is None:
        return {}
    problems: list = []
    recorded = json_cell(value, "meta", "key=llm_config", "value", problems, expect=(dict,))
    if recorded is None:
        raise LLMConfigError(f"{replay_dir}: the recorded run's LLM settings cannot be read: "
                             f"{problems[0] if problems else 'empty'}")
    values = {k: recorded[k] for k in _REQUEST_FIELDS if k in recorded and recorded[k] not in (None, [])}
    if "profiles" in values:
        values["profiles"] = {p.pop("pattern"): p for p in values["profiles"]}
    return values


def config_from_options(**options) -> LLMConfig:
    """The configuration from the shared options (keyword arguments named as in OPTION_NAMES;
    None or "" is not given)."""
    unknown = set(options) - set(OPTION_NAMES)
    if unknown:
        raise LLMConfigError(f"unknown LLM option(s): {', '.join(sorted(unknown))}")
    given = {name: value for name, value in options.items() if value not in (None, "")}
    # $NADER_CONFIG is read here, not by click: `run` hands its flags to any strategy, LLM or not.
    config_path = given.pop("llm_config", None) or os.environ.get("NADER_CONFIG") or None
    replay = given.pop("replay", None)
    path = Path(config_path) if config_path else (Path(DEFAULT_CONFIG) if Path(DEFAULT_CONFIG).is_file() else None)
    config = load_config(path)
    if replay:
        recorded = config_from_mapping(recorded_config(replay), where=f"recorded run {replay}")
        config = dataclasses.replace(config, **{k: getattr(recorded, k) for k in _REQUEST_FIELDS
                                                if getattr(recorded, k) != getattr(LLMConfig(), k)})
    settings = [_BY_NAME[name] for name in given]
    return dataclasses.replace(config, **{s.field: check_value(s.field, given[s.name], s.long) for s in settings})
