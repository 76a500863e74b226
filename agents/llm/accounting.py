"""Token and dollar accounting, and the hard caps.

Every call is tallied three ways: in the run's total, under its agent role and under the
architecture it was made for. Caps are checked before a call starts against its worst case
(the prompt's estimated tokens plus the full completion allowance, at the model's price), with
the calls already in flight reserved the same way. A call billed above its reservation, or with
usage that is no count (NaN, negative), is booked at the reservation (`booking`), so the spend
booked never passes a cap. Replies answered from the record (cache, replay) cost nothing and are
counted apart.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Optional

from nader.inputs import InputError, finite_number

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
        self.untrusted: Optional[BudgetExceeded] = None  # set by an over-billed call: nothing more is sent

    @property
    def spent_tokens(self) -> int:
        return self.prior.total_tokens + self.usage.total.total_tokens

    @property
    def spent_cost(self) -> float:
        return self.prior.cost_usd + self.usage.total.cost_usd

    def reserve(self, tokens: int, cost_usd: float) -> Reservation:
        """Hold a call's worst case, or raise BudgetExceeded when it could pass a cap (or when an
        earlier call of this session was billed above its reservation)."""
        with self._lock:
            if self.untrusted is not None:
                raise BudgetExceeded(self.untrusted.reason, kind=self.untrusted.kind, limit=self.untrusted.limit,
                                     spent=self.untrusted.spent)
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

    def overrun(self, reservation: Reservation, billed: Tally, reported: str) -> Optional[BudgetExceeded]:
        """The stop to raise when a call was billed above its reservation under a cap (booked at the
        reservation, so the cap holds): the server's usage figures passed the worst case the
        protocol allows, so no later reservation can be trusted. `reported`: the server's figures."""
        capped = self.max_total_tokens is not None or self.max_cost_usd is not None
        if not capped or not exceeds(reservation, billed):
            return None
        said = (f"the endpoint reported {reported} for a call reserved at {reservation.tokens:,} tokens"
                f" ({dollars(reservation.cost_usd)}), its worst case")
        if self.max_cost_usd is not None:
            stop = BudgetExceeded(f"{said}; booked at the reservation: {dollars(self.spent_cost)} spent of the"
                                  f" {dollars(self.max_cost_usd)} cap",
                                  kind="cost", limit=self.max_cost_usd, spent=self.spent_cost)
        else:
            stop = BudgetExceeded(f"{said}; booked at the reservation: {self.spent_tokens:,} tokens spent of the"
                                  f" {self.max_total_tokens:,} cap",
                                  kind="tokens", limit=self.max_total_tokens, spent=self.spent_tokens)
        self.untrusted = stop
        return stop


def exceeds(reservation: Reservation, billed: Tally) -> bool:
    """Whether a call's billed figures pass what was reserved for its worst case."""
    return billed.total_tokens > reservation.tokens or billed.cost_usd > reservation.cost_usd + 1e-12


MAX_USAGE_TOKENS = 10 ** 12  # far above any context window: a larger figure is a broken server


def usage_count(value) -> Optional[int]:
    """A server's token count as an int (nader.inputs), or None when it is not one a ledger can
    book: NaN, an infinity, a negative or fractional number, text, or a figure past MAX_USAGE_TOKENS."""
    try:
        return finite_number(value, "usage", lo=0, hi=MAX_USAGE_TOKENS, integer=True)
    except InputError:
        return None


def booking(held: Reservation, prompt_tokens, completion_tokens, worst_tokens: tuple[int, int], price):
    """(billed, booked, note): what the server's usage says the call cost, what is booked,
    and the warning when they differ. A figure that is no count (NaN, negative, text) or a
    bill above the reservation is booked at the reservation: the caps are never passed."""
    p, c = usage_count(prompt_tokens), usage_count(completion_tokens)
    reserved = Tally(calls=1, prompt_tokens=worst_tokens[0], completion_tokens=worst_tokens[1],
                     cost_usd=held.cost_usd, unpriced_calls=int(price is None))
    if p is None or c is None:
        note = (f"the endpoint reported usage that is not a token count ({reported(prompt_tokens, completion_tokens)});"
                f" the call is booked at its reservation, {held.tokens:,} tokens ({dollars(held.cost_usd)})")
        return reserved, reserved, note
    billed = Tally(calls=1, prompt_tokens=p, completion_tokens=c, cost_usd=price.cost(p, c) if price else 0.0,
                   unpriced_calls=int(price is None))
    if not exceeds(held, billed):
        return billed, billed, None
    note = (f"the endpoint reported {reported(p, c, billed)}, above the call's reservation of {held.tokens:,}"
            f" tokens ({dollars(held.cost_usd)}), the most its prompt and max_tokens allow; booked at the"
            f" reservation")
    return billed, reserved, note


def reported(prompt_tokens, completion_tokens, billed: Optional[Tally] = None) -> str:
    """A server's usage figures as it gave them (a NaN shows as nan), with their price."""
    def shown(v):
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else repr(v)[:40]
    cost = f" ({dollars(billed.cost_usd)})" if billed is not None and not billed.unpriced_calls else ""
    return f"{shown(prompt_tokens)} prompt and {shown(completion_tokens)} completion tokens{cost}"


def dollars(value: float) -> str:
    """US dollars for messages: cents from $1 up, two significant figures below (never "$0.0000"
    for a small sum): $4.00, $0.5, $0.00021."""
    if value >= 1:
        return f"${value:,.2f}"
    if value <= 0:
        return "$0"
    decimals = max(2, 1 - math.floor(math.log10(value)))
    return "$" + f"{value:.{decimals}f}".rstrip("0").rstrip(".")
