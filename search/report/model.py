"""What a report shows, independent of where it was read from.

`ReportArch` is one architecture of the modification tree; `Run` the search's settings and totals.
`search.report.load` fills them from a run directory; tests build them directly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

FAILED_STATUSES = ("invalid", "over-budget", "failed", "diverged")


@dataclass
class ReportArch:
    id: str
    parent: Optional[str]
    status: str  # proposed | invalid | duplicate | over-budget | screened-out | training | ok | diverged | failed
    text: str = ""
    change: dict = field(default_factory=dict)  # {"operator", "args"} or {"plan", "idea", ...}
    valid_acc: Optional[float] = None  # percent, mean over seeds
    test_acc: Optional[float] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    diagnostics: list = field(default_factory=list)  # [{"code", "message", "line"}]
    error_kind: Optional[str] = None  # training failure kind: oom, killed, timeout, nan, ...
    error: Optional[str] = None
    duplicate_of: Optional[str] = None
    created: Optional[float] = None  # unix seconds
    finished: Optional[float] = None
    seconds: Optional[float] = None  # training wall time
    tokens: int = 0
    cost: float = 0.0
    llm_rounds: Optional[int] = None
    rungs: list = field(default_factory=list)  # multi-fidelity: [{rung, epochs, valid_acc, promoted, ...}]
    origin: str = ""  # root | mutation | llm | ...
    objectives: dict = field(default_factory=dict)  # reported objectives beyond valid_acc (nader.search.objectives)

    @property
    def repair(self) -> Optional[dict]:
        """The compiler's repair of the LLM's block (`--repair auto`): written, diff, fixed, applied."""
        repair = self.change.get("repair")
        return repair if isinstance(repair, dict) else None

    @property
    def trained(self) -> bool:
        return self.status == "ok" and self.valid_acc is not None

    @property
    def rung(self) -> int:
        """The highest rung entered (0 without multi-fidelity)."""
        return self.rungs[-1]["rung"] if self.rungs else 0

    def rank_key(self) -> tuple:
        """Best first: the highest rung, then validation accuracy (as `nader-search best`)."""
        return (-self.rung, -(self.valid_acc if self.valid_acc is not None else float("-inf")))


@dataclass
class Run:
    name: str
    dataset: str = ""
    preset: str = ""
    strategy: str = ""
    started: Optional[float] = None
    config: dict = field(default_factory=dict)
    # What the LLM client noticed of the server and told once (a dropped system message, a model
    # name the server does not list): a run must not degrade silently, in its report either.
    llm_notes: list = field(default_factory=list)
    # What the training-free proxies cost, apart from the queries (`store.proxy_stats`, one line each).
    proxies: list = field(default_factory=list)
