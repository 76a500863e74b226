"""Token and dollar accounting, and the hard caps.

Every call is tallied three ways: in the run's total, under its agent role and under the
architecture it was made for. Caps are checked before a call starts against its worst case
(the prompt's estimated tokens plus the full completion allowance, at the model's price), with
the calls already in flight reserved the same way, so the spend never passes a cap. Replies
answered from the record (cache, replay) cost nothing and are counted apart.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Optional

from .errors import BudgetExceeded


@dataclass
class Tally:
    calls: int = 0               # calls answered by the endpoint
    recorded_calls: int = 0      # calls answered from the record (cache or replay): free
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0      # calls of a model with no known price (their cost is not in cost_usd)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: "Tally") -> None:
        for name in ("calls", "recorded_calls", "failed_calls", "prompt_tokens", "completion_tokens",
                     "cost_usd", "unpriced_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict:
        return {"calls": self.calls, "recorded_calls": self.recorded_calls, "failed_calls": self.failed_calls,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "cost_usd": self.cost_usd,
                "unpriced_calls": self.unpriced_calls}


@dataclass
class Usage:
    """What this client spent: in total, per agent role and per architecture."""
    total: Tally = field(default_factory=Tally)
    by_role: dict[str, Tally] = field(default_factory=dict)
    by_arch: dict[str, Tally] = field(default_factory=dict)

    def add(self, one: Tally, role: str, arch_id: Optional[str]) -> None:
        self.total.add(one)
        self.by_role.setdefault(role, Tally()).add(one)
        if arch_id is not None:
            self.by_arch.setdefault(str(arch_id), Tally()).add(one)

    def as_dict(self) -> dict:
        return {"total": self.total.as_dict(),
                "by_role": {k: v.as_dict() for k, v in sorted(self.by_role.items())},
                "by_arch": {k: v.as_dict() for k, v in sorted(self.by_arch.items())}}


@dataclass(frozen=True)
class Reservation:
    tokens: int
    cost_usd: float


class Ledger:
    """Caps over the run's spend: `prior` (earlier sessions of the run) plus this session's."""

    def __init__(self, *, max_cost_usd: Optional[float], max_total_tokens: Optional[int], prior: Tally | None = None):
        self.max_cost_usd = max_cost_usd
        self.max_total_tokens = max_total_tokens
        self.prior = prior or Tally()
        self.usage = Usage()
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        self._lock = threading.Lock()

    @property
    def spent_tokens(self) -> int:
        return self.prior.total_tokens + self.usage.total.total_tokens

    @property
    def spent_cost(self) -> float:
        return self.prior.cost_usd + self.usage.total.cost_usd

    def reserve(self, tokens: int, cost_usd: float) -> Reservation:
        """Hold a call's worst case, or raise BudgetExceeded when it could pass a cap."""
        with self._lock:
            if self.max_total_tokens is not None:
                committed = self.spent_tokens + self._reserved_tokens
                if committed + tokens > self.max_total_tokens:
                    raise BudgetExceeded(
                        f"token cap reached: {self.spent_tokens:,} tokens spent of {self.max_total_tokens:,}"
                        f" ({self._reserved_tokens:,} held by calls in flight; the next call may take up to"
                        f" {tokens:,}); raise max_total_tokens (--max-tokens-total) and run again to resume",
                        kind="tokens", limit=self.max_total_tokens, spent=self.spent_tokens)
            if self.max_cost_usd is not None:
                committed = self.spent_cost + self._reserved_cost
                if committed + cost_usd > self.max_cost_usd + 1e-12:
                    raise BudgetExceeded(
                        f"cost cap reached: ${self.spent_cost:.4f} spent of ${self.max_cost_usd:.4f}"
                        f" (${self._reserved_cost:.4f} held by calls in flight; the next call may cost up to"
                        f" ${cost_usd:.4f}); raise max_cost_usd (--max-cost) and run again to resume",
                        kind="cost", limit=self.max_cost_usd, spent=self.spent_cost)
            self._reserved_tokens += tokens
            self._reserved_cost += cost_usd
            return Reservation(tokens, cost_usd)

    def release(self, reservation: Optional[Reservation]) -> None:
        if reservation is None:
            return
        with self._lock:
            self._reserved_tokens -= reservation.tokens
            self._reserved_cost -= reservation.cost_usd

    def settle(self, reservation: Optional[Reservation], one: Tally, role: str, arch_id: Optional[str]) -> None:
        with self._lock:
            if reservation is not None:
                self._reserved_tokens -= reservation.tokens
                self._reserved_cost -= reservation.cost_usd
            self.usage.add(one, role, arch_id)
