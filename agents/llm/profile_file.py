"""Writing one model profile into a TOML config file (`llm check --write`) without touching the
rest of it: the file's other keys, comments and order stay as they were, and only the table
`[llm.profiles."PATTERN"]` is added or replaced. The result must load through `load_config`, or
nothing is written; it is written through `write_file` (a failure leaves the file as it was).
"""
from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Sequence

from nader.inputs import InputError, load_toml, read_bounded_text
from nader.inputs.writes import WriteRefused, write_file

from .config import MAX_BYTES, MAX_DEPTH, load_config
from .errors import LLMConfigError
from .profiles import ModelProfile

_HEADER = re.compile(r"^\s*\[")


def profile_table(profile: ModelProfile, comments: Sequence[str] = ()) -> str:
    """The TOML text of a profile table."""
    if '"' in profile.pattern or "\\" in profile.pattern or "\n" in profile.pattern:
        raise LLMConfigError(f"cannot write a profile for the model name {profile.pattern!r}")
    lines = [*(f"# {c}" for c in comments), f'[llm.profiles."{profile.pattern}"]']
    for key, value in _values(profile).items():
        text = str(value).lower() if isinstance(value, bool) else f'"{value}"' if isinstance(value, str) else int(value)
        lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"


def write_profile(path: Path, profile: ModelProfile, comments: Sequence[str] = ()) -> None:
    """Add or replace `[llm.profiles."PATTERN"]` in the TOML file at `path` (created if missing)."""
    path = Path(path)
    try:
        old = read_bounded_text(path, "LLM configuration", max_bytes=MAX_BYTES) if os.path.lexists(path) else ""
        existing = load_toml(old, "LLM configuration", max_depth=MAX_DEPTH, source=str(path))
        existing = existing.get("llm", {}).get("profiles", {})
    except InputError as exc:
        raise LLMConfigError(str(exc)) from None
    except AttributeError as exc:
        raise LLMConfigError(f"{path}: not a TOML file with an [llm] table: {exc}") from None
    table = profile_table(profile, comments)
    if profile.pattern in existing:
        new = _replace_table(old, profile.pattern, table, path)
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + ("\n" if old.strip() else "") + table
    try:
        loaded = tomllib.loads(new)["llm"]["profiles"][profile.pattern]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise LLMConfigError(f"{path}: the profile cannot be added to this file by machine ({exc}); add by hand:\n"
                             f"{table}") from None
    if any(loaded.get(k) != v for k, v in _values(profile).items()):
        raise LLMConfigError(f"{path}: the profile cannot be added to this file by machine; add by hand:\n{table}")
    load_config(path, text=new)  # the file the product will read must load
    try:
        write_file(path, new, what="LLM configuration")
    except WriteRefused as exc:
        raise LLMConfigError(str(exc)) from None


def _values(profile: ModelProfile) -> dict:
    return {"token_param": profile.token_param, "temperature": profile.temperature,
            "reasoning_effort": profile.reasoning_effort, "json": profile.json, "system": profile.system,
            "grammar": profile.grammar, **({"reply": profile.reply} if profile.reply != "block" else {}),
            **({"small": True} if profile.small else {}),
            **{key: getattr(profile, key) for key in ("context", "max_tokens") if getattr(profile, key) is not None}}


def _replace_table(text: str, pattern: str, table: str, path: Path) -> str:
    """The text with the table `[llm.profiles."PATTERN"]` (up to the next header) replaced."""
    header = re.compile(r'^\s*\[\s*llm\s*\.\s*profiles\s*\.\s*"' + re.escape(pattern) + r'"\s*\]\s*(#.*)?$')
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        raise LLMConfigError(f'{path}: the profile "{pattern}" is not written as a [llm.profiles."..."] table;'
                             f" replace it by hand with:\n{table}")
    end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    while end > start + 1 and lines[end - 1].lstrip().startswith("#"):
        end -= 1  # comments just above the next table belong to it
    return "".join(lines[:start]) + table + ("\n" if end < len(lines) else "") + "".join(lines[end:])
