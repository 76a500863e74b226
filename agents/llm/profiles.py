"""Model profiles: the request quirks of model families, matched by model name.

A profile says which token-limit parameter the model takes, whether it accepts a temperature,
whether it takes `reasoning_effort`, and which JSON output mode it supports. The first pattern
(a shell-style glob, case-insensitive) that matches the model name wins; the user's profiles
(`[llm.profiles."PATTERN"]`) are tried before the built-in ones, and `*` matches anything.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace

from .errors import LLMConfigError

TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
JSON_MODES = ("json_schema", "json_object", "none")


@dataclass(frozen=True)
class ModelProfile:
    pattern: str
    token_param: str = "max_tokens"
    temperature: bool = True
    reasoning_effort: bool = False
    json: str = "json_object"  # json_schema | json_object | none


# OpenAI's reasoning models take max_completion_tokens and reject temperature; its current chat
# models accept both names, max_tokens being deprecated. Servers such as vLLM, Ollama and
# llama.cpp take max_tokens and json_object (the `*` profile).
BUILTIN_PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile("o1-mini*", "max_completion_tokens", temperature=False, reasoning_effort=False, json="none"),
    ModelProfile("o1-preview*", "max_completion_tokens", temperature=False, reasoning_effort=False, json="none"),
    ModelProfile("o[1-9]*", "max_completion_tokens", temperature=False, reasoning_effort=True, json="json_schema"),
    ModelProfile("gpt-5*", "max_completion_tokens", temperature=False, reasoning_effort=True, json="json_schema"),
    ModelProfile("gpt-4o*", "max_completion_tokens", json="json_schema"),
    ModelProfile("gpt-4.1*", "max_completion_tokens", json="json_schema"),
    ModelProfile("*"),
)


def profile_from_table(pattern: str, table: dict) -> ModelProfile:
    """A profile from a TOML table; unknown keys and bad values are configuration errors."""
    where = f'[llm.profiles."{pattern}"]'
    known = {"token_param", "temperature", "reasoning_effort", "json"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise LLMConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    profile = ModelProfile(pattern)
    if "token_param" in table:
        if table["token_param"] not in TOKEN_PARAMS:
            raise LLMConfigError(f"{where}: token_param must be one of {', '.join(TOKEN_PARAMS)}")
        profile = replace(profile, token_param=table["token_param"])
    for flag in ("temperature", "reasoning_effort"):
        if flag in table:
            if not isinstance(table[flag], bool):
                raise LLMConfigError(f"{where}: {flag} must be true or false")
            profile = replace(profile, **{flag: table[flag]})
    if "json" in table:
        if table["json"] not in JSON_MODES:
            raise LLMConfigError(f"{where}: json must be one of {', '.join(JSON_MODES)}")
        profile = replace(profile, json=table["json"])
    return profile


def match_profile(model: str, user_profiles: tuple[ModelProfile, ...] = ()) -> ModelProfile:
    name = model.lower()
    for profile in (*user_profiles, *BUILTIN_PROFILES):
        if fnmatch.fnmatchcase(name, profile.pattern.lower()):
            return profile
    raise AssertionError("the '*' profile matches every model")  # pragma: no cover


def request_params(profile: ModelProfile, *, max_tokens: int | None, temperature: float | None,
                   reasoning_effort: str | None, json_schema: dict | None, want_json: bool) -> dict:
    """The chat-completions parameters for one call, with what the model does not take left out."""
    params: dict = {}
    if max_tokens is not None:
        params[profile.token_param] = int(max_tokens)
    if temperature is not None and profile.temperature:
        params["temperature"] = float(temperature)
    if reasoning_effort and profile.reasoning_effort:
        params["reasoning_effort"] = reasoning_effort
    if want_json or json_schema is not None:
        if json_schema is not None and profile.json == "json_schema":
            params["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": json_schema.get("title", "reply"), "schema": json_schema}}
        elif profile.json in ("json_schema", "json_object"):
            params["response_format"] = {"type": "json_object"}
    return params
