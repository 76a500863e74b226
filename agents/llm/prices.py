"""Prices in US dollars per million tokens, matched by model name; the user's table comes first.

The built-in entries are OpenAI's published list prices (standard tier, mid-2025); prices change,
so `[llm.prices."MODEL"]` (a name or a glob, `input` and `output` in USD per million tokens)
overrides them. A model with no price has an unknown cost: its calls are counted, and a dollar
cap refuses to start with it (declare a local model free with `input = 0, output = 0`).
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass

from .errors import LLMConfigError


@dataclass(frozen=True)
class Price:
    pattern: str
    input: float   # USD per million prompt tokens
    output: float  # USD per million completion tokens

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


BUILTIN_PRICES: tuple[Price, ...] = (
    Price("gpt-4o-mini*", 0.15, 0.60),
    Price("gpt-4o*", 2.50, 10.00),
    Price("gpt-4.1-nano*", 0.10, 0.40),
    Price("gpt-4.1-mini*", 0.40, 1.60),
    Price("gpt-4.1*", 2.00, 8.00),
    Price("gpt-5-nano*", 0.05, 0.40),
    Price("gpt-5-mini*", 0.25, 2.00),
    Price("gpt-5*", 1.25, 10.00),
    Price("o1-mini*", 1.10, 4.40),
    Price("o1*", 15.00, 60.00),
    Price("o3-mini*", 1.10, 4.40),
    Price("o3*", 2.00, 8.00),
    Price("o4-mini*", 1.10, 4.40),
    Price("text-embedding-3-small", 0.02, 0.0),
    Price("text-embedding-3-large", 0.13, 0.0),
    Price("text-embedding-ada-002", 0.10, 0.0),
)


def price_from_table(pattern: str, table: dict) -> Price:
    where = f'[llm.prices."{pattern}"]'
    unknown = sorted(set(table) - {"input", "output"})
    if unknown or "input" not in table:
        raise LLMConfigError(f"{where}: give `input` and `output` in USD per million tokens"
                             + (f" (unknown key(s) {', '.join(unknown)})" if unknown else ""))
    values = (table["input"], table.get("output", 0.0))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf for v in values):
        raise LLMConfigError(f"{where}: prices must be numbers >= 0")
    return Price(pattern, float(values[0]), float(values[1]))


def find_price(model: str, user_prices: tuple[Price, ...] = ()) -> Price | None:
    """The user's first matching entry, else the built-in one, else None (unknown cost)."""
    name = model.lower()
    for price in (*user_prices, *BUILTIN_PRICES):
        if fnmatch.fnmatchcase(name, price.pattern.lower()):
            return price
    return None
