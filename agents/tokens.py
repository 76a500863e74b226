"""Tokens per agent: a thin wrapper that counts what each role's calls used.

The LLM client keeps usage per role and per architecture for the calls its endpoint answered in
this session; the agents want every reply's figures, recorded ones included, so that a resumed
or replayed run reports the tokens of the calls it reuses.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Spent:
    by_role: dict = field(default_factory=dict)  # role -> prompt + completion tokens
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class CountingClient:
    """Passes `chat_sync` and `reject` through to an LLM client and adds up each reply's tokens
    and cost until `take()`."""

    def __init__(self, client):
        self.client = client
        self._spent = Spent()

    def chat_sync(self, messages, *, role=None, **kwargs):
        reply = self.client.chat_sync(messages, role=role, **kwargs)
        s, key = self._spent, role or "agent"
        s.by_role[key] = s.by_role.get(key, 0) + (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        s.prompt_tokens += reply.prompt_tokens or 0
        s.completion_tokens += reply.completion_tokens or 0
        s.cost_usd += reply.cost_usd or 0.0
        return reply

    def reject(self, reply, reason: str) -> None:
        self.client.reject(reply, reason)

    @property
    def config(self):
        return self.client.config

    def window(self):
        return self.client.window()

    def take(self) -> Spent:
        """What was spent since the last `take`."""
        spent, self._spent = self._spent, Spent()
        spent.by_role = dict(sorted(spent.by_role.items()))
        return spent
