"""Numbers and short text from outside: typed, finite, in range, bounded.

A bool is not a number here (TOML's `true` must not pass as 1), text is parsed only when the caller
says it may be (SQLite cells, flags), and is bounded before `float()` or `int()` sees it.
"""
from __future__ import annotations

import math
from typing import Optional, Union

from .errors import InputError

Number = Union[int, float]
#: the longest number text parsed (`int()` refuses 4,301 digits with a ValueError of its own)
MAX_NUMBER_TEXT = 64


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _from_text(value: str, what: str, integer: bool) -> Number:
    text = value.strip()
    if len(text) > MAX_NUMBER_TEXT:
        raise InputError(f"{what}: a number of {len(text):,} characters is too long (at most {MAX_NUMBER_TEXT})")
    try:
        return int(text) if integer else float(text)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise InputError(f"{what}: expected {kind}, got {_describe(value)}") from None


def finite_number(value, what: str, *, lo: Optional[Number] = None, hi: Optional[Number] = None,
                  integer: bool = False, from_text: bool = False) -> Number:
    """`value` as a finite number in [lo, hi] (an int when `integer`); InputError otherwise.

    `from_text` lets a string through `int()`/`float()` after a length bound. An integral float passes
    as an int when `integer` (JSON and SQLite may hand back 3.0)."""
    if from_text and isinstance(value, str):
        value = _from_text(value, what, integer)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "a whole number" if integer else "a number"
        raise InputError(f"{what}: expected {kind}, got {_describe(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{what}: {value} is not a finite number; give a finite value")
        if integer:
            if not value.is_integer():
                raise InputError(f"{what}: expected a whole number, got {value}")
            value = int(value)
    if lo is not None and value < lo:
        raise InputError(f"{what}: {_describe(value)} is below the least allowed, {lo}")
    if hi is not None and value > hi:
        raise InputError(f"{what}: {_describe(value)} is above the most allowed, {hi}")
    return value


def positive(value, what: str, *, hi: Optional[Number] = None, integer: bool = False,
             from_text: bool = False) -> Number:
    """A finite number > 0 (>= 1 when `integer`), at most `hi`."""
    number = finite_number(value, what, hi=hi, integer=integer, from_text=from_text)
    if number <= 0:
        raise InputError(f"{what}: {_describe(number)} must be positive")
    return number


def non_negative(value, what: str, *, hi: Optional[Number] = None, integer: bool = False,
                 from_text: bool = False) -> Number:
    """A finite number >= 0, at most `hi`."""
    number = finite_number(value, what, hi=hi, integer=integer, from_text=from_text)
    if number < 0:
        raise InputError(f"{what}: {_describe(number)} must not be negative")
    return number


def bounded_str(value, what: str, max_chars: int) -> str:
    """`value` as a str of at most `max_chars` characters."""
    if not isinstance(value, str):
        raise InputError(f"{what}: expected text, got {_describe(value)}")
    if len(value) > max_chars:
        raise InputError(f"{what}: {len(value):,} characters is too long (at most {max_chars:,})")
    return value
