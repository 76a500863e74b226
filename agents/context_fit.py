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


def cut_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, the marker included, when longer."""
    if len(text) <= limit:
        return text
    marker = f"\n[... cut to fit the model's context: {len(text)} characters, the rest left out]"
    return text[:max(0, limit - len(marker))] + marker
