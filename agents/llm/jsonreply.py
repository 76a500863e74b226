"""Strict parsing of JSON replies.

A reply is accepted when, after an optional leading `<think>...</think>` block (reasoning models
served by vLLM or Ollama print one), it is exactly one JSON object, bare or inside one Markdown
code fence. Anything else (prose around it, two objects, a cut-off object) is a `ReplyFormatError`
whose message says what is wrong; callers send that message back once and ask again. Nothing
else is raised, whatever the reply holds: a reply is untrusted input.
"""
from __future__ import annotations

import json
import re

_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)
_FENCE = re.compile(r"^```(?:json|JSON)?[ \t]*\n(.*)\n```$", re.S)
# Far above what a completion allowance yields (4096 tokens is about 16,000 characters): a longer
# reply is a broken server or model, refused before any parsing.
MAX_REPLY_CHARS = 200_000


class ReplyFormatError(ValueError):
    """The reply is not the JSON the prompt asked for."""


def reply_too_long(text: str) -> str | None:
    """Why a reply is refused unread for its size, or None. The words do not depend on the length:
    the record keeps only a prefix of such a reply (record.bounded_reply), and a replay must send
    the model the same feedback as the recorded run did."""
    if len(text) > MAX_REPLY_CHARS:
        return f"the reply is longer than the {MAX_REPLY_CHARS:,} characters a reply may have"
    return None


def with_cut_off(feedback: str, truncated: bool) -> str:
    """The feedback on an unusable reply, led by the likelier cause where the reply hit the token
    limit: a model that rambles (a small one repeats lines until `max_tokens`) is cut mid-line,
    and the diagnostics of that last line would send it after the wrong fix."""
    if not truncated:
        return feedback
    return ("- the reply was cut off at the token limit before it ended: answer with only what was asked, in"
            " fewer lines, with no comments and no repeated lines\n" + feedback)


def parse_json_object(text: str, *, truncated: bool = False) -> dict:
    too_long = reply_too_long(text)
    if too_long:
        raise ReplyFormatError(f"{too_long}; answer with one short JSON object")
    body = _THINK.sub("", text, count=1).strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise ReplyFormatError("the reply is empty; answer with one JSON object")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        cut = " (the reply was cut off at the token limit: answer more briefly)" if truncated else ""
        raise ReplyFormatError(f"the reply is not one JSON object: {exc.msg} at line {exc.lineno} column {exc.colno}"
                               f"{cut}; answer with the JSON object only, no text around it") from None
    except (ValueError, RecursionError) as exc:  # an integer of thousands of digits, nesting past the stack
        raise ReplyFormatError(f"the reply's JSON cannot be read ({type(exc).__name__}: {str(exc)[:200]}); answer "
                               f"with a plain JSON object") from None
    if not isinstance(value, dict):
        raise ReplyFormatError(f"the reply is JSON but a {type(value).__name__}, not an object")
    return value
