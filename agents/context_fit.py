"""Prompts that fit the model's context window.

A profile's `context` (tokens) is the server's window: a prompt longer than it, less the reply's
`max_tokens`, is refused (vLLM) or cut at the front where the instructions are (llama.cpp). An
agent renders its prompt with the variable part (a paper's method section, a history list) empty,
asks `room_chars` how much of that part fits, and cuts it with `cut_text`, which says in the text
that it was cut. Characters stand for tokens at 3 a token: tokenizers give English prose about 4
and code or numbers fewer, so the estimate errs on the side of fitting. Without a known context
nothing is cut here.
"""
from __future__ import annotations

from typing import Optional, Sequence

CHARS_PER_TOKEN = 3
MESSAGE_TOKENS = 8  # the chat template's role markers around each message


def estimated_tokens(messages: Sequence[dict]) -> int:
    """Tokens the messages take at most, by the conservative estimate."""
    return sum(-(-len(m["content"]) // CHARS_PER_TOKEN) + MESSAGE_TOKENS for m in messages)


def room_chars(context: Optional[int], skeleton: Sequence[dict], reply_tokens: int) -> Optional[int]:
    """Characters of variable text that fit beside `skeleton` (the prompt with that text empty) and
    a reply of `reply_tokens`; None when the context is unknown."""
    if not context:
        return None
    return max(0, (context - reply_tokens - estimated_tokens(skeleton)) * CHARS_PER_TOKEN)


def client_room(client, skeleton: Sequence[dict]) -> Optional[int]:
    """`room_chars` for an LLM client's model (its profile's `context`, its `max_tokens`)."""
    return room_chars(client.context_tokens(), skeleton, client.config.max_tokens)


def latest_that_fit(items: Sequence[str], limit: Optional[int]) -> list[str]:
    """The last items (a history, oldest first) whose text fits in `limit` characters, after a
    line saying how many earlier ones were left out; all of them when `limit` is None."""
    if limit is None or sum(len(i) + 4 for i in items) <= limit:
        return list(items)
    kept: list[str] = []
    used = 80  # the note below
    for item in reversed(items):
        if used + len(item) + 4 > limit:
            break
        kept.insert(0, item)
        used += len(item) + 4
    return [f"({len(items) - len(kept)} earlier entries left out to fit the model's context)", *kept]


def cut_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, the marker included, when longer."""
    if len(text) <= limit:
        return text
    marker = f"\n[... cut to fit the model's context: {len(text)} characters, the rest left out]"
    return text[:max(0, limit - len(marker))] + marker
