"""The LLM configuration: a TOML section `[llm]`, then flags over it, the key from the environment.

    [llm]
    base_url = "http://localhost:8000/v1"   # any OpenAI-compatible server
    model = "Qwen/Qwen2.5-Coder-7B-Instruct"
    api_key_env = "NADER_LLM_API_KEY"       # the variable holding the key (default; OPENAI_API_KEY is tried next)
    max_cost_usd = 5.0                      # hard caps; the run stops cleanly, resumably
    max_total_tokens = 2000000

    [llm.prices."Qwen/*"]                   # USD per million tokens (overrides the built-in table)
    input = 0.0
    output = 0.0

    [llm.profiles."my-reasoner*"]           # model quirks (overrides the built-in profiles)
    token_param = "max_completion_tokens"
    temperature = false
    json = "none"                           # the prompt alone asks for JSON (a server slow in JSON mode)
    system = "merge"                        # system text folded into the first user message

See docs/llm.md for every key. There is no default endpoint: nothing leaves the machine unless
a base_url is configured.
"""
from __future__ import annotations

import dataclasses
import math
import os
from urllib.parse import urlsplit
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from nader.inputs import InputError, load_toml

from .errors import LLMConfigError
from .prices import Price, price_from_table
from .profiles import ModelProfile, profile_from_table

DEFAULT_KEY_ENV = "NADER_LLM_API_KEY"
FALLBACK_KEY_ENV = "OPENAI_API_KEY"
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
MAX_BYTES = 1 << 20  # an [llm] file is a few hundred bytes, with profiles and prices a few kilobytes
MAX_DEPTH = 16


@dataclass(frozen=True)
class LLMConfig:
    base_url: Optional[str] = None
    model: Optional[str] = None
    embedding_model: Optional[str] = None
    api_key: Optional[str] = field(default=None, repr=False)
    api_key_env: str = DEFAULT_KEY_ENV
    temperature: Optional[float] = None      # None: the server's default
    max_tokens: int = 4096                   # completion tokens per call
    reasoning_effort: Optional[str] = None   # sent only to models whose profile takes it
    request_timeout: float = 120.0           # seconds for one HTTP attempt
    deadline: float = 600.0                  # seconds for one call, all attempts and back-off included
    max_retries: int = 4                     # further attempts after a 429, 5xx, timeout or broken reply
    backoff_base: float = 1.0                # seconds; attempt n waits uniform(0, min(max, base * 2**n))
    backoff_max: float = 30.0
    breaker_failures: int = 5                # consecutive failed calls that open the circuit breaker
    max_concurrency: int = 4                 # calls in flight at once
    max_cost_usd: Optional[float] = None
    max_total_tokens: Optional[int] = None
    profiles: tuple[ModelProfile, ...] = ()
    prices: tuple[Price, ...] = ()

    def resolved_key(self) -> Optional[str]:
        """The key from the config, else the environment variable it names, else OPENAI_API_KEY."""
        if self.api_key:
            return self.api_key
        return os.environ.get(self.api_key_env) or os.environ.get(FALLBACK_KEY_ENV) or None


_SCALARS = {f.name: f for f in dataclasses.fields(LLMConfig) if f.name not in ("profiles", "prices")}
_TYPES = {
    "base_url": str, "model": str, "embedding_model": str, "api_key": str, "api_key_env": str,
    "temperature": float, "max_tokens": int, "reasoning_effort": str, "request_timeout": float, "deadline": float,
    "max_retries": int, "backoff_base": float, "backoff_max": float, "breaker_failures": int,
    "max_concurrency": int, "max_cost_usd": float, "max_total_tokens": int,
}
_POSITIVE = {"max_tokens", "request_timeout", "deadline", "breaker_failures", "max_concurrency", "max_total_tokens",
             "max_cost_usd"}
MAX_INT = 10 ** 15  # far above any count these keys take; a larger one is a typo or an attack


def url_problem(value: str) -> str:
    """Why `value` is not an endpoint URL ("" when it is): scheme, host and port checked up front,
    so a run does not end "invalid" after its first call."""
    if not value.startswith(("http://", "https://")):
        return "must start with http:// or https://"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError as exc:
        return f"is not a URL ({exc})"
    if not parts.hostname:
        return "names no host"
    return ""


def check_value(name: str, value: Any, where: str) -> Any:
    kind = _TYPES[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise LLMConfigError(f"{where}: {name} must be {'a number' if kind is not str else 'a string'}, got {value!r}")
    if kind is float and not math.isfinite(value):
        raise LLMConfigError(f"{where}: {name} must be a finite number, got {value!r}")
    if kind is int and value > MAX_INT:
        raise LLMConfigError(f"{where}: {name} must be at most {MAX_INT:,}, got {value!r:.40}")
    if kind is not str and (value < 0 or (name in _POSITIVE and value == 0)):
        raise LLMConfigError(f"{where}: {name} must be {'> 0' if name in _POSITIVE else '>= 0'}, got {value!r}")
    if name == "reasoning_effort" and value not in REASONING_EFFORTS:
        raise LLMConfigError(f"{where}: reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}")
    if name == "base_url" and url_problem(value):
        raise LLMConfigError(f"{where}: base_url {url_problem(value)}, got {value!r}")
    return value


def config_from_mapping(section: Mapping[str, Any], where: str = "[llm]") -> LLMConfig:
    """An LLMConfig from the contents of an `[llm]` table."""
    values: dict[str, Any] = {}
    for name, value in section.items():
        if name in ("profiles", "prices"):
            read = profile_from_table if name == "profiles" else price_from_table
            try:
                values[name] = tuple(read(p, t) for p, t in _tables(value, f"{where}.{name}"))
            except LLMConfigError as exc:  # the table's own message, after the file's name
                message = str(exc)
                raise LLMConfigError(message if message.startswith(where) else f"{where}: {message}") from None
        elif name in _SCALARS:
            values[name] = check_value(name, value, where)
        else:
            known = ", ".join(sorted([*_SCALARS, "profiles", "prices"]))
            raise LLMConfigError(f"{where}: unknown key {name!r} (known: {known})")
    return LLMConfig(**values)


def _tables(value: Any, where: str):
    if not isinstance(value, dict) or not all(isinstance(t, dict) for t in value.values()):
        raise LLMConfigError(f'{where}: expected tables such as {where}."PATTERN"')
    return value.items()


def load_config(path: Optional[Path] = None, overrides: Optional[Mapping[str, Any]] = None, *,
                text: Optional[str] = None) -> LLMConfig:
    """The `[llm]` section of a TOML file (none: defaults), with non-None `overrides` (flags) on top;
    `text`: the file's text as it is about to be written (checked before the file is replaced)."""
    config = LLMConfig()
    if path is not None:
        path = Path(path)
        try:  # a regular bounded UTF-8 file, nesting bounded (nader.inputs)
            data = load_toml(path if text is None else text, "LLM configuration", max_depth=MAX_DEPTH,
                             max_bytes=MAX_BYTES, source=str(path))
        except InputError as exc:
            raise LLMConfigError(str(exc)) from None
        section = data.get("llm", {})
        if not isinstance(section, dict):
            raise LLMConfigError(f"{path}: [llm] must be a table")
        config = config_from_mapping(section, where=f"{path} [llm]")
    changes = {k: check_value(k, v, f"--{k.replace('_', '-')}")
               for k, v in (overrides or {}).items() if v is not None}
    return dataclasses.replace(config, **changes)
