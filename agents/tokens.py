"""Tokens per agent: a thin wrapper that counts what each role's calls used.

The LLM client already keeps usage per role and per architecture for this session, but only for
calls its endpoint answered; the agents want every reply's figures, the recorded ones included, so
that a replayed run reports the tokens of the run it replays.
"""
from __future__ import annotations

from collections import defaultdict


class CountingClient:
    """Passes `chat_sync` and `reject` through to an LLM client, adding each reply's tokens to
    `by_role[role]` as [prompt tokens, completion tokens]."""

    def __init__(self, client):
        self.client = client
        self.by_role: dict = defaultdict(lambda: [0, 0])

    def chat_sync(self, messages, *, role=None, **kwargs):
        reply = self.client.chat_sync(messages, role=role, **kwargs)
        tally = self.by_role[role or "agent"]
        tally[0] += reply.prompt_tokens or 0
        tally[1] += reply.completion_tokens or 0
        return reply

    def reject(self, reply, reason: str) -> None:
        self.client.reject(reply, reason)

    def take(self) -> dict:
        """The counts since the last `take`, by role, as {"role": total tokens}; then reset."""
        out = {role: sum(t) for role, t in sorted(self.by_role.items())}
        self.by_role.clear()
        return out
