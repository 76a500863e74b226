"""Prompt templates: one Jinja2 file per prompt in this folder, named `AGENT_ACTION.vN.j2`.

A prompt is referred to by its versioned name (`reader_relevance.v1`); a change to a prompt's
wording or output format is a new file with the next version, so recorded runs keep naming the
text they used. Each file starts with a comment that documents its inputs and the output format
its reply must have; a template may `{% set system = "..." %}` for a system message, and its
rendered body is the user message. Inputs are values, never templates: paper text and model
replies are inserted as data (autoescape is off because the output is not HTML).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import jinja2

PROMPTS_DIR = Path(__file__).resolve().parent
_NAME = re.compile(r"^[a-z]+_[a-z_]+\.v\d+$")
_DOC = re.compile(r"^\{#(.*?)#\}", re.S)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(PROMPTS_DIR)), undefined=jinja2.StrictUndefined,
                              autoescape=False, keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True)


def prompt_names() -> list[str]:
    return sorted(p.name[:-3] for p in PROMPTS_DIR.glob("*.j2") if not p.name.startswith("_"))


def prompt_doc(name: str) -> str:
    """The documentation comment at the top of a prompt file."""
    text = (PROMPTS_DIR / f"{name}.j2").read_text(encoding="utf-8")
    m = _DOC.match(text)
    return m.group(1).strip() if m else ""


def render(name: str, **variables) -> list[dict]:
    """The chat messages of prompt `name` (e.g. `reader_relevance.v1`) with `variables` filled in."""
    if not _NAME.match(name) or not (PROMPTS_DIR / f"{name}.j2").is_file():
        raise KeyError(f"no prompt {name!r} (known: {', '.join(prompt_names())})")
    template = _environment().get_template(f"{name}.j2")
    module = template.make_module(variables)
    messages = []
    system = getattr(module, "system", None)
    if system:
        messages.append({"role": "system", "content": str(system).strip()})
    messages.append({"role": "user", "content": str(module).strip()})
    return messages
