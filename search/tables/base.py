"""What every table shares: the record it answers a lookup with, the error of a lookup it cannot
answer, and the interface (:class:`Table`) the loop's `lookup.TableEvaluator` reads through.

The tables (`benchmark.py` for NAS-Bench-201/NATS-Bench, `derived.py` for a derived table) build on
these, so neither has to import the other for them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional, Protocol

from nader.inputs import InputError, finite_number

#: accuracies are percentages
ACCURACY = (0.0, 100.0)


class TableError(Exception):
    """A trial the table cannot answer, or a benchmark file it cannot read; the message says why
    and ``kind`` what is missing: ``not-in-space``, ``missing-entry`` (no record of the
    architecture), ``missing-epoch`` (no result at that epoch budget), ``missing-seed``,
    ``missing-value`` (a record without the number), ``unreadable`` (the file)."""

    def __init__(self, message: str, kind: str = "unreadable"):
        super().__init__(message)
        self.kind = kind


def number(value, what: str, lo: Optional[float] = None, hi: Optional[float] = None) -> float:
    """A table's number, finite and in [lo, hi], or TableError(missing-value) for None, NaN, an
    infinity, text that is not a number or a value out of range (`nader.inputs.finite_number`)."""
    if value is None:
        raise TableError(f"{what} is None, not a number", "missing-value")
    if not isinstance(value, (int, float, str)):  # numpy scalars and the like
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TableError(f"{what} is {type(value).__name__}, not a number", "missing-value") from None
    try:
        return float(finite_number(value, what, lo=lo, hi=hi, from_text=True))
    except InputError as exc:
        raise TableError(str(exc), "missing-value") from None


@dataclass
class TableRecord:
    arch: str  # the NAS-Bench-201 string that was looked up
    dataset: str
    epochs: int
    seed: Optional[int]  # None: mean over the table's trials
    valid_acc: Optional[float]  # percent; None where the setting has no validation set
    test_acc: Optional[float]
    seconds: Optional[float]  # simulated training time (see the module docstring)
    params: int
    flops: int
    source: str = ""  # e.g. "nats-bench:NATS-tss-v1_0-3ffb9.pickle.pbz2 hp=12"
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class Table(Protocol):
    """A benchmark table: what `lookup.TableEvaluator` asks of one (the official benchmarks', a
    derived file)."""

    def test_schedules(self, dataset: str) -> set: ...

    def valid_schedules(self, dataset: str) -> set: ...

    def evaluate(self, arch: str, dataset: str, epochs: int, seed: Optional[int] = None,
                 test_epochs: Optional[int] = None) -> TableRecord: ...
