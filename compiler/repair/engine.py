"""The repair loop: propose fixes for each error, keep the one that verifies best, repeat.

Each step verifies the text, asks the fix kinds (and the diagnostics' own fixes) for
candidates, applies each one, verifies the result and keeps the best candidate: fewest errors
left, then fewest warnings, then fewest nodes added, then safe before unsafe, then the kind's
order. A candidate is kept only when it leaves fewer errors than before, so the loop ends.
Safe fixes run to a fixed point first; unsafe ones only when asked. Everything is in a fixed
order, so the same text always gets the same repair.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Optional

from nader.dsl.diagnostics import SAFE, UNSAFE, Diagnostic, Fix, apply_fix, sort_key
from nader.dsl.limits import DEFAULT_LIMITS
from nader.dsl.parser import parse

from ..passes.verify import BlockReport, verify_program
from .context import RepairContext
from .kinds import all_kinds, kinds_for
from .result import AppliedFix, RepairResult

#: Fixes applied at most per repair, and diagnostics and candidates looked at per step: a bound on
#: the work untrusted text can cause (each candidate is one verification).
MOST_STEPS = 24
MOST_DIAGNOSTICS = 8
MOST_CANDIDATES = 24
#: Verifications one repair (or one file's suggestions) may run in all: what bounds the time a large
#: damaged block can take (each verification of a block of n nodes costs about n).
MOST_VERIFICATIONS = 400


class _Budget:
    def __init__(self, text: str):
        # a larger file gets fewer verifications: the work stays about the same
        self.left = max(40, MOST_VERIFICATIONS * 2000 // max(2000, len(text)))

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


@dataclass
class _State:
    text: str
    reports: list[BlockReport]
    errors: list[tuple[Optional[BlockReport], Diagnostic]]
    warnings: int

    @property
    def nodes(self) -> int:
        return sum(len(r.block.nodes) for r in self.reports)

    @property
    def score(self) -> tuple[int, int]:
        return len(self.errors), self.warnings


def _verify(text: str, options: dict) -> _State:
    options = dict(options)
    parsed = parse(text, options.pop("path", "<string>"), options.pop("input_limits", DEFAULT_LIMITS))
    reports, file_level = verify_program(parsed, **options)
    errors = [(None, d) for d in file_level if d.is_error]
    warnings = sum(not d.is_error for d in file_level)
    for report in reports:
        for d in report.diagnostics:
            if d.is_error:
                errors.append((report, d))
            else:
                warnings += 1
    errors.sort(key=lambda rd: sort_key(rd[1]))
    return _State(text, reports, errors, warnings)


def _candidates(state: _State, allowed: frozenset, disabled: frozenset) -> Iterator[tuple[str, Fix]]:
    """(code, fix) for the first errors, most plausible first within each."""
    lines = state.text.split("\n")
    for report, d in state.errors[:MOST_DIAGNOSTICS]:
        found = 0
        if d.fix is not None and d.fix.safety in allowed and d.fix.kind not in disabled:
            found += 1
            yield d.code.code, d.fix
        if report is None:
            continue
        ctx = RepairContext(lines, report)
        for module in kinds_for(d.code.code):
            kind = module.KIND
            if kind.safety not in allowed or kind.name in disabled:
                continue
            for fix in module.candidates(ctx, d):
                if found >= MOST_CANDIDATES:
                    break
                found += 1
                yield d.code.code, fix


def _step(state: _State, allowed: frozenset, disabled: frozenset, options: dict, budget: _Budget):
    """The best (new state, applied fix) from one candidate, or None when none leaves fewer errors."""
    kinds = all_kinds()
    best = None
    for index, (code, fix) in enumerate(_candidates(state, allowed, disabled)):
        if not budget.take():
            break
        try:
            text = apply_fix(state.text, fix)
        except (IndexError, ValueError):
            continue
        if text == state.text:
            continue
        after = _verify(text, options)
        if after.score[0] >= state.score[0]:
            continue
        kind = kinds.get(fix.kind)
        rank = (after.score, after.nodes - state.nodes, fix.safety != SAFE, kind.order if kind else 50, index)
        if best is None or rank < best[0]:
            best = (rank, after, AppliedFix(code, fix.kind, fix.safety, fix.message))
    return None if best is None else best[1:]


def repair_text(text: str, *, unsafe: bool = False, disabled: frozenset = frozenset(), **verify_options) -> RepairResult:
    """Repair the errors of a block file's text with safe fixes (and unsafe ones when `unsafe`).

    `disabled` names fix kinds not to use; `verify_options` are `verify_program`'s (role,
    stem_stride, limits, domain), and `input_limits` and `path` for the parser. The result holds the repaired text, the fixes applied and the
    errors that remain; the same text and options always give the same result.
    """
    state = _verify(text, verify_options)
    budget = _Budget(text)
    applied: list[AppliedFix] = []
    phases = (frozenset({SAFE}), frozenset({SAFE, UNSAFE})) if unsafe else (frozenset({SAFE}),)
    for allowed in phases:
        while state.errors and len(applied) < MOST_STEPS:
            step = _step(state, allowed, frozenset(disabled), verify_options, budget)
            if step is None:
                break
            state, fix = step
            applied.append(fix)
    return RepairResult(text, state.text, tuple(applied), tuple(d for _, d in state.errors))


def suggest_fixes(text: str, reports: list[BlockReport], **verify_options) -> None:
    """Attach to each error of `reports` (verified from `text`) that carries no fix the best fix the
    kinds offer (safe or unsafe) whose result verifies with fewer errors; `nadc verify` shows them.

    The reports' diagnostics are replaced in place; valid blocks cost nothing.
    """
    if all(report.ok for report in reports):
        return
    state = _verify(text, verify_options)
    budget = _Budget(text)
    kinds = all_kinds()
    lines = text.split("\n")
    both = frozenset({SAFE, UNSAFE})
    for report in reports:
        if report.ok:
            continue
        mine = [(r, d) for r, d in state.errors if r is not None and r.block.span == report.block.span]
        for k, d in enumerate(report.diagnostics):
            if not d.is_error or d.fix is not None or k >= MOST_DIAGNOSTICS:
                continue
            match = next((r for r, e in mine if e.code is d.code and e.span == d.span), None)
            if match is None:
                continue
            best = None
            single = _State(text, state.reports, [(match, d)], state.warnings)
            for index, (_, fix) in enumerate(_candidates(single, both, frozenset())):
                if not budget.take():
                    break
                try:
                    after = _verify(apply_fix(text, fix), verify_options)
                except (IndexError, ValueError):
                    continue
                if after.score[0] >= state.score[0]:
                    continue
                kind = kinds.get(fix.kind)
                rank = (after.score, after.nodes - state.nodes, fix.safety != SAFE, kind.order if kind else 50, index)
                if best is None or rank < best[0]:
                    best = (rank, fix)
            if best is not None:
                report.diagnostics[k] = replace(d, fix=best[1])
