"""The command-line options every LLM-using command shares, declared once: `read`, `kb`,
`bench-nad` and `nader-search run` take them with the same names, the search strategies take the
same settings as options (`llm_base_url`...), and docs/llm.md's flag table is tested against them.
They are plain data (`LLMFlag`); the click options that read them are made in `nader.agents.llm.cli`.

Precedence, lowest first: built-in defaults, the config file's `[llm]` section (`--llm-config`,
else `$NADER_CONFIG`, else `nader.toml` in the current directory when present), in replay mode the request settings the
recorded run used (model, parameters, profiles), then the flags.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from nader.runtime.integrity import json_cell

from .config import LLMConfig, check_value, config_from_mapping, load_config
from .errors import LLMConfigError
from .record import CallStore

DEFAULT_CONFIG = "nader.toml"
# What shapes a request, so what a replay must take from the recorded run to ask the same.
_REQUEST_FIELDS = ("model", "embedding_model", "temperature", "max_tokens", "reasoning_effort", "profiles")
_SI = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}


def parse_count(value) -> int:
    """A positive integer with an optional K/M/G suffix (2M, 1.5k); ValueError otherwise."""
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)\s*", str(value))
    count = int(round(float(m.group(1)) * _SI[m.group(2).lower()])) if m else 0
    if count < 1:
        raise ValueError("expected a positive count such as 2000000 or 2M")
    return count


def parse_positive(value) -> float:
    """A positive finite number (caps and timeouts); ValueError otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number") from None
    if not (0 < number < float("inf")):
        raise ValueError(f"expected a positive finite number, not {value!r}")
    return number


#: What an LLMFlag's value is (CLI modules map each to their parameter type):
#: file and dir are paths, text a string, positive a positive finite number (parse_positive),
#: count a positive count with K/M/G (parse_count), at-least-1 an integer >= 1.
KINDS = ("file", "dir", "text", "positive", "count", "at-least-1")


@dataclass(frozen=True)
class LLMFlag:
    """An LLM option as plain data; `nader.agents.llm.cli.llm_options` makes click options of them."""

    flag: str                  # the spelling on every command
    field: str                 # the LLMConfig field it sets ("config_path", "replay": not a field)
    kind: str                  # one of KINDS
    help: str
    old: tuple[str, ...] = ()  # hidden old spellings, kept for one release with a warning
    run_cap: bool = False      # a cap on the whole run: `nader-search run` hands it to its loop, not its strategy

    @property
    def name(self) -> str:
        """The keyword argument a command receives, and the search strategies' option name."""
        return self.flag[2:].replace("-", "_")


LLM_FLAGS = (
    LLMFlag("--llm-config", "config_path", "file",
            f"TOML file with an [llm] section [env NADER_CONFIG; default ./{DEFAULT_CONFIG} if present].",
            old=("--config",)),
    LLMFlag("--llm-base-url", "base_url", "text", "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."),
    LLMFlag("--llm-model", "model", "text", "Chat model name as the endpoint knows it."),
    LLMFlag("--llm-api-key-env", "api_key_env", "text",
            "Environment variable holding the API key [default: NADER_LLM_API_KEY, then OPENAI_API_KEY]."),
    LLMFlag("--llm-timeout", "request_timeout", "positive", "Seconds per HTTP attempt."),
    LLMFlag("--llm-deadline", "deadline", "positive", "Seconds per call, retries included."),
    LLMFlag("--llm-concurrency", "max_concurrency", "at-least-1", "Calls in flight at once."),
    LLMFlag("--llm-max-cost", "max_cost_usd", "positive",
            "Cap in US dollars on the run's LLM calls; no call whose worst case could pass it is sent.",
            old=("--max-cost",), run_cap=True),
    LLMFlag("--llm-max-tokens", "max_total_tokens", "count", "Cap on the run's LLM tokens in + out, e.g. 2M.",
            old=("--max-tokens-total", "--max-tokens"), run_cap=True),
    LLMFlag("--embedding-model", "embedding_model", "text", "Embedding model of the endpoint's embeddings API."),
    LLMFlag("--replay", "replay", "dir",
            "Answer every LLM call from this recorded run; no endpoint is used, a call it did not make is an error."),
)
OPTION_NAMES = tuple(f.name for f in LLM_FLAGS)
_BY_NAME = {f.name: f for f in LLM_FLAGS}
NAME_OF_FIELD = {f.field: f.name for f in LLM_FLAGS}


def old_dest(old: str) -> str:
    """The keyword an old spelling of a flag arrives as, before it is renamed."""
    return "old_" + old[2:].replace("-", "_")


def renamed_values(kwargs: dict) -> list[str]:
    """Moves the values given under old spellings in `kwargs` to the new names; returns the warnings
    to print. ValueError where a flag is given under both names."""
    warnings = []
    for flag in LLM_FLAGS:
        for old in flag.old:
            value = kwargs.pop(old_dest(old), None)
            if value is None:
                continue
            if kwargs.get(flag.name) is not None:
                raise ValueError(f"{old} is the old name of {flag.flag}: give {flag.flag} alone")
            warnings.append(f"warning: {old} is now {flag.flag}; the old name goes in the next release")
            kwargs[flag.name] = value
    return warnings


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
    flags = [_BY_NAME[name] for name in given]
    return dataclasses.replace(config, **{f.field: check_value(f.field, given[f.name], f.flag) for f in flags})
