"""Prompts that fit the model's context window.

A profile's `context` (tokens) is the server's window: a prompt longer than it, less the reply's
`max_tokens`, is refused (vLLM) or cut at the front where the instructions are (llama.cpp). An
agent renders its prompt with the variable part (a paper's method section, a history list) empty,
asks `room_chars` how much of that part fits, and cuts it with `cut_text`, which says in the text
that it was cut. A conversation that grows (a reply sent back with the compiler's feedback or a
parse error) goes through `fit_conversation`, which keeps the first prompt and the latest round
when the whole would not fit. Characters stand for tokens at 3 a token: tokenizers give English
prose about 4 and code or numbers fewer, so the estimate errs on the side of fitting. Without a
known context nothing is cut here.
"""
from __future__ import annotations

from typing import Optional, Sequence

CHARS_PER_TOKEN = 3
MESSAGE_TOKENS = 8  # the chat template's role markers around each message
ROUND_CHARS = 1200  # kept free in a first prompt for a reply sent back (cut) with its feedback


def estimated_tokens(messages: Sequence[dict]) -> int:
    """Tokens the messages take at most, by the conservative estimate."""
    return sum(-(-len(m["content"]) // CHARS_PER_TOKEN) + MESSAGE_TOKENS for m in messages)


def room_chars(context: Optional[int], skeleton: Sequence[dict], reply_tokens: int) -> Optional[int]:
    """Characters of variable text that fit beside `skeleton` (the prompt with that text empty) and
    a reply of `reply_tokens`; None when the context is unknown."""
    if not context:
        return None
    return max(0, (context - reply_tokens - estimated_tokens(skeleton)) * CHARS_PER_TOKEN)


def client_room(client, skeleton: Sequence[dict], *, converse: bool = False) -> Optional[int]:
    """`room_chars` for an LLM client's model (its profile's `context`, its reply's tokens); with
    `converse` (a reply may go back with feedback) less `ROUND_CHARS` kept for that round."""
    context, reply_tokens = client.window()
    room = room_chars(context, skeleton, reply_tokens)
    return room if room is None or not converse else max(0, room - ROUND_CHARS)


NOTE_CHARS = 80  # a line saying how many entries were left out


def newest_that_fit(sizes: Sequence[int], limit: int) -> int:
    """How many of the last entries (their sizes in characters, oldest first) fit in `limit`
    characters, a line saying how many were left out included."""
    used, kept = NOTE_CHARS, 0
    for size in reversed(sizes):
        if used + size > limit:
            break
        used += size
        kept += 1
    return kept


def latest_that_fit(items: Sequence[str], limit: Optional[int]) -> list[str]:
    """The last items (a history, oldest first) whose text fits in `limit` characters, after a
    line saying how many earlier ones were left out; all of them when `limit` is None."""
    if limit is None or not items or sum(len(i) + 4 for i in items) <= limit:
        return list(items)
    kept = newest_that_fit([len(i) + 4 for i in items], limit)
    return [f"({len(items) - kept} earlier entries left out to fit the model's context)",
            *items[len(items) - kept:]]


def best_that_fit(items: Sequence[str], limit: Optional[int]) -> list[str]:
    """The first items (a list ranked best first) whose text fits in `limit` characters, then a
    line saying how many others were left out; all of them when `limit` is None."""
    if limit is None or not items or sum(len(i) + 4 for i in items) <= limit:
        return list(items)
    kept = newest_that_fit([len(i) + 4 for i in reversed(items)], limit)
    return [*items[:kept], f"({len(items) - kept} more left out to fit the model's context)"]


def cut_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, the marker included, when longer."""
    if len(text) <= limit:
        return text
    marker = f"\n[... cut to fit the model's context: {len(text)} characters, the rest left out]"
    return text[:max(0, limit - len(marker))] + marker


def cut_texts(texts: Sequence[str], limit: Optional[int]) -> list[str]:
    """`texts` cut to `limit` characters together: each gets an equal share, and what a short one
    leaves over goes to the longer ones; unchanged when `limit` is None or they fit."""
    if limit is None or sum(len(t) for t in texts) <= limit:
        return list(texts)
    out, left = list(texts), limit
    for done, i in enumerate(sorted(range(len(texts)), key=lambda k: len(texts[k]))):
        out[i] = cut_text(texts[i], max(0, left // (len(texts) - done)))
        left -= len(out[i])
    return out


def fit_conversation(client, first: Sequence[dict], rounds: Sequence[dict]) -> list[dict]:
    """The messages of a conversation: the first prompt, then `rounds` (reply, then feedback,
    repeated). When they and a reply would not fit the model's context, only the latest reply and
    feedback follow the first prompt, the feedback says how many earlier rounds were left out, and
    those two are cut if even that does not fit (a first prompt sized with `converse` leaves them
    room). Unchanged when the context is unknown."""
    messages = [*first, *rounds]
    context, reply_tokens = client.window()
    if not context or len(rounds) < 2 or estimated_tokens(messages) + reply_tokens <= context:
        return messages
    reply, feedback = rounds[-2:]
    left_out = (len(rounds) - 2) // 2
    if left_out:
        feedback = {**feedback, "content": f"({left_out} earlier round{'s' if left_out != 1 else ''} of replies "
                                           f"and feedback left out to fit the model's context)\n{feedback['content']}"}
    room = room_chars(context, [*first, {**reply, "content": ""}, {**feedback, "content": ""}], reply_tokens)
    # less a token: each of the two messages rounds its characters up to whole tokens
    reply_text, feedback_text = cut_texts([reply["content"], feedback["content"]], max(0, room - CHARS_PER_TOKEN))
    return [*first, {**reply, "content": reply_text}, {**feedback, "content": feedback_text}]
