"""Token and dollar accounting, and the hard caps.

Every call is tallied three ways: in the run's total, under its agent role and under the
architecture it was made for. Caps are checked before a call starts against its worst case
(the prompt's estimated tokens plus the full completion allowance, at the model's price), with
the calls already in flight reserved the same way, so the spend never passes a cap. Replies
answered from the record (cache, replay) cost nothing and are counted apart.
"""
from __future__ import annotations

import math
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
                    held = f", {self._reserved_tokens:,} held by calls in flight" if self._reserved_tokens else ""
                    raise BudgetExceeded(
                        f"token cap reached: {self.spent_tokens:,} tokens spent of the {self.max_total_tokens:,} cap"
                        f"{held}; the next call may take up to {tokens:,}",
                        kind="tokens", limit=self.max_total_tokens, spent=self.spent_tokens)
            if self.max_cost_usd is not None:
                committed = self.spent_cost + self._reserved_cost
                if committed + cost_usd > self.max_cost_usd + 1e-12:
                    held = f", {dollars(self._reserved_cost)} held by calls in flight" if self._reserved_cost else ""
                    raise BudgetExceeded(
                        f"cost cap reached: {dollars(self.spent_cost)} spent of the {dollars(self.max_cost_usd)} cap"
                        f"{held}; the next call may cost up to {dollars(cost_usd)}",
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

    def overrun(self, reservation: Reservation, one: Tally) -> Optional[BudgetExceeded]:
        """The stop to raise when a settled call was billed above its reservation under a cap: the
        server's usage figures passed the worst case, so no later reservation can be trusted."""
        over_tokens = self.max_total_tokens is not None and one.total_tokens > reservation.tokens
        over_cost = self.max_cost_usd is not None and one.cost_usd > reservation.cost_usd + 1e-12
        if not (over_tokens or over_cost):
            return None
        billed = (f"the endpoint reported {one.prompt_tokens:,} prompt and {one.completion_tokens:,} completion"
                  f" tokens ({dollars(one.cost_usd)}) for a call reserved at {reservation.tokens:,} tokens"
                  f" ({dollars(reservation.cost_usd)}), its worst case")
        if over_cost:
            return BudgetExceeded(f"{billed}; booked as billed: {dollars(self.spent_cost)} spent of the"
                                  f" {dollars(self.max_cost_usd)} cap",
                                  kind="cost", limit=self.max_cost_usd, spent=self.spent_cost)
        return BudgetExceeded(f"{billed}; booked as billed: {self.spent_tokens:,} tokens spent of the"
                              f" {self.max_total_tokens:,} cap",
                              kind="tokens", limit=self.max_total_tokens, spent=self.spent_tokens)


def dollars(value: float) -> str:
    """US dollars for messages: cents from $1 up, two significant figures below (never "$0.0000"
    for a small sum): $4.00, $0.5, $0.00021."""
    if value >= 1:
        return f"${value:,.2f}"
    if value <= 0:
        return "$0"
    decimals = max(2, 1 - math.floor(math.log10(value)))
    return "$" + f"{value:.{decimals}f}".rstrip("0").rstrip(".")
