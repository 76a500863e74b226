"""Model profiles: the request quirks of model families, matched by model name.

A profile says which token-limit parameter the model takes, whether it accepts a temperature,
whether it takes `reasoning_effort`, which JSON output mode it supports, and whether its chat
template has a system role (`system = "native"`) or needs the system text folded into the first
user message (`"merge"`: Gemma's templates have none, and some servers drop it), which field
takes a grammar for constrained decoding (`grammar`: llama.cpp's `grammar`, vLLM's
`structured_outputs`), the server's context length in tokens (`context`, unknown when unset:
agents size their prompts to it), and the most completion tokens to ask per call (`max_tokens`,
unset: `[llm] max_tokens`), for a server too slow to write a full reply within the request timeout,
and how the Modifier asks for a block (`reply`: the whole block, or `"edits"` of the parent, for small
models that restate a block until `max_tokens`; nader.dsl.edits), and whether the model is small
(`small`: prompts then ask for the answer before any rationale, GENIUS's cell first, so that a
model which rambles until `max_tokens` has named one). The first pattern
(a shell-style glob, case-insensitive) that matches the model name wins; the user's profiles
(`[llm.profiles."PATTERN"]`) are tried before the built-in ones, and `*` matches anything.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, fields, replace
from typing import Optional

from .errors import LLMConfigError

_RUNS = re.compile(r"(.)\1+", re.S)
TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
JSON_MODES = ("json_schema", "json_object", "none")
SYSTEM_MODES = ("native", "merge")
GRAMMAR_MODES = ("none", "llama.cpp", "vllm")
REPLY_MODES = ("block", "edits")
_CHOICES = {"token_param": TOKEN_PARAMS, "json": JSON_MODES, "system": SYSTEM_MODES, "grammar": GRAMMAR_MODES,
            "reply": REPLY_MODES}


@dataclass(frozen=True)
class ModelProfile:
    pattern: str
    token_param: str = "max_tokens"
    temperature: bool = True
    reasoning_effort: bool = False
    json: str = "json_object"  # json_schema | json_object | none
    system: str = "native"     # native | merge
    grammar: str = "none"      # none | llama.cpp | vllm: where a caller's GBNF grammar goes
    context: Optional[int] = None  # the server's context length in tokens (None: unknown)
    max_tokens: Optional[int] = None  # a cap on [llm] max_tokens for this model (None: no cap)
    reply: str = "block"       # block | edits: how the Modifier asks for a block (edits of the parent: small models)
    small: bool = False        # a small model: the answer before any rationale (GENIUS's cell first)


# OpenAI's reasoning models take max_completion_tokens and reject temperature; its current chat
# models accept both names, max_tokens being deprecated. Servers such as vLLM, Ollama and
# llama.cpp take max_tokens and json_object (the `*` profile).
# Gemma's chat templates have no system role: Google's own template and llama.cpp's put the
# system text before the first user turn (llama.cpp PR #5665), llama-cpp-python's `gemma` format
# drops it (measured, issue 23). Mistral-7B-Instruct v0.1/v0.2 and Mixtral-8x7B-Instruct v0.1
# templates refuse a system message (vLLM issue #2080, autogen issue #1037). A .gguf model name is a llama.cpp server,
# where json_object made generation 21 times slower (measured with Gemma 3 270M, issue 23):
# replies are parsed strictly with one retry whatever the mode, so the prompt alone asks for JSON.
BUILTIN_PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile("o1-mini*", "max_completion_tokens", temperature=False, reasoning_effort=False, json="none"),
    ModelProfile("o1-preview*", "max_completion_tokens", temperature=False, reasoning_effort=False, json="none"),
    ModelProfile("o[1-9]*", "max_completion_tokens", temperature=False, reasoning_effort=True, json="json_schema"),
    ModelProfile("gpt-5*", "max_completion_tokens", temperature=False, reasoning_effort=True, json="json_schema"),
    ModelProfile("gpt-4o*", "max_completion_tokens", json="json_schema"),
    ModelProfile("gpt-4.1*", "max_completion_tokens", json="json_schema"),
    ModelProfile("*gemma*", json="none", system="merge"),
    ModelProfile("*mistral-7b-instruct-v0.[12]*", system="merge"),
    ModelProfile("*mixtral-8x7b-instruct-v0.1*", system="merge"),
    ModelProfile("*.gguf", json="none"),
    ModelProfile("*"),
)


#: more tokens than any model's context: a bound before the number is used in arithmetic
MOST_TOKENS = 10**9


def profile_from_table(pattern: str, table: dict) -> ModelProfile:
    """A profile from a TOML table; unknown keys and bad values are configuration errors."""
    where = f'[llm.profiles."{pattern}"]'
    known = {f.name for f in fields(ModelProfile)} - {"pattern"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise LLMConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    profile = ModelProfile(pattern)
    for key, choices in _CHOICES.items():
        if key in table:
            if table[key] not in choices:
                raise LLMConfigError(f"{where}: {key} must be one of {', '.join(choices)}")
            profile = replace(profile, **{key: table[key]})
    for flag in ("temperature", "reasoning_effort", "small"):
        if flag in table:
            if not isinstance(table[flag], bool):
                raise LLMConfigError(f"{where}: {flag} must be true or false")
            profile = replace(profile, **{flag: table[flag]})
    for key in ("context", "max_tokens"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MOST_TOKENS:
                raise LLMConfigError(f"{where}: {key} must be a positive number of tokens, at most {MOST_TOKENS:,}")
            profile = replace(profile, **{key: value})
    return profile


def match_profile(model: str, user_profiles: tuple[ModelProfile, ...] = ()) -> ModelProfile:
    name = model.lower()
    for profile in (*user_profiles, *BUILTIN_PROFILES):
        if fnmatch.fnmatchcase(name, profile.pattern.lower()):
            return profile
    raise AssertionError("the '*' profile matches every model")  # pragma: no cover


def profile_for(client) -> Optional[ModelProfile]:
    """The profile of an LLM client's model (the user's profiles first), or None when the client
    names no model (a test's stand-in)."""
    config = getattr(client, "config", None)
    model = getattr(config, "model", None)
    return match_profile(model, tuple(getattr(config, "profiles", ()))) if model else None


def request_params(profile: ModelProfile, *, max_tokens: int | None, temperature: float | None,
                   reasoning_effort: str | None, json_schema: dict | None, want_json: bool,
                   grammar: str | None = None) -> dict:
    """The chat-completions parameters for one call, with what the model does not take left out.
    `grammar` (GBNF text) goes where the profile's server takes it, and nowhere without one."""
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
    if grammar and profile.grammar == "llama.cpp":
        params["extra_body"] = {"grammar": grammar}
    elif grammar and profile.grammar == "vllm":  # vLLM 0.10.2+; older ones took `guided_grammar`
        params["extra_body"] = {"structured_outputs": {"grammar": grammar}}
    return params


def merge_system(messages: list[dict]) -> list[dict]:
    """The messages with every system text folded into the first user message, as Gemma's own
    template does: the system text, a blank line, then the user's text. Without a user message
    the system text becomes one."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [m for m in messages if m["role"] != "system"]
    if not system:
        return rest
    for i, message in enumerate(rest):
        if message["role"] == "user":
            return [*rest[:i], {"role": "user", "content": f"{system}\n\n{message['content']}"}, *rest[i + 1:]]
    return [{"role": "user", "content": system}, *rest]


def system_tokens_at_least(text: str) -> int:
    """A lower bound on the tokens any chat model's tokenizer gives `text`: one per 6 characters
    once runs of one repeated character (indentation, rules of dashes, which a tokenizer may
    take as one token) count as one character. BPE and SentencePiece vocabularies average about
    4 characters a token on English prose and fewer on code; 6 leaves room for long words."""
    return len(_RUNS.sub(r"\1", text)) // 6
