"""Every verified repair of each error, not only the best: `nadc fix --list` and the editor's quick fixes.

The repair loop keeps one candidate per step (engine.py). Where two repairs are as good as each
other (narrow the layer that made a `2*C` operand, or add a 1x1 `Conv2d` before the `Add`), the
user may want the other; this module lists them all. An alternative is a candidate fix with which
the verifier gets further in its block, as the loop measures it (each verified on the block alone,
the other blocks as they are); ranked as the loop ranks them, best first. With `complete`, each is
also followed by the repair of what it leaves (`repair_text`), which says whether the block then
verifies: what `--list` shows.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Optional

from nader.dsl.diagnostics import SAFE, UNSAFE, Diagnostic, Fix, apply_fix

from .engine import repair_text, restated_within, verify_text
from .region import BlockRegion
from .search import MOST_DIAGNOSTICS, MOST_ERRORS, RepairBudget, error_candidates

#: Verifications one listing may run per file (its candidates; the follow-up repairs have their own budget).
MOST_LIST_VERIFICATIONS = 200


@dataclass(frozen=True)
class Alternative:
    """One verified repair of an error."""

    fix: Fix
    nodes_added: int  # negative where nodes go
    diff: str  # the fix alone, as a unified diff
    verifies: Optional[bool] = None  # with `complete`: the block verifies once this fix and the repair after it apply
    then: tuple = ()  # with `complete`: the fixes the repair after it applies (AppliedFix)

    def to_json(self) -> dict:
        out = {"kind": self.fix.kind, "safety": self.fix.safety, "message": self.fix.message,
               "nodes_added": self.nodes_added, "fix": self.fix.to_json(), "diff": self.diff}
        if self.verifies is not None:
            out.update(verifies=self.verifies, then=[f.to_json() for f in self.then])
        return out


@dataclass(frozen=True)
class ErrorAlternatives:
    diagnostic: Diagnostic
    alternatives: tuple[Alternative, ...]
    unsearched: Optional[str] = None  # why no candidate was tried, where none was (`nadc fix --list` says it)

    def to_json(self) -> dict:
        return {**self.diagnostic.to_json(), "alternatives": [a.to_json() for a in self.alternatives],
                "searched": self.unsearched is None}


def fix_alternatives(text: str, *, unsafe: bool = True, disabled: frozenset = frozenset(), complete: bool = True,
                     lines: Optional[tuple[int, int]] = None, **verify_options) -> list[ErrorAlternatives]:
    """For each error of `text` (the first MOST_DIAGNOSTICS of each block; with `lines`, those on lines
    `lines[0]` to `lines[1]` only), every fix that gets the verifier further in its block: safe ones, and
    unsafe ones when `unsafe`; best first. Errors of the file itself (not of a block) get their own fix
    only. A file past MOST_ERRORS is searched only where `nadc fix` repairs it too: with `unsafe`, when once
    each block's restatement goes (`drop-restatement`) no more are left. `verify_options` as `repair_text`'s."""
    state = verify_text(text, verify_options)
    if len(state.errors) > MOST_ERRORS and not (unsafe and restated_within(state, frozenset(disabled), verify_options)):
        why = f"the file has more errors than a repair takes on ({MOST_ERRORS}); `nadc fix` leaves it as it is"
        return [ErrorAlternatives(d, (), why) for _, d in state.errors]
    allowed = frozenset({SAFE, UNSAFE}) if unsafe else frozenset({SAFE})
    budget = RepairBudget(text, MOST_LIST_VERIFICATIONS)
    wanted = lines
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in state.reports] + [len(lines) + 1]
    out: list[ErrorAlternatives] = []
    for report, d in state.errors:
        if wanted is not None and (d.span.end_line < wanted[0] or d.span.line > wanted[1]):
            continue
        if report is None:
            fixes = (d.fix,) if d.fix is not None and d.fix.safety in allowed and d.fix.kind not in disabled else ()
            out.append(ErrorAlternatives(d, tuple(Alternative(f, 0, _diff(text, f)) for f in fixes)))
            continue
        index = state.reports.index(report)
        if report.diagnostics.index(d) >= MOST_DIAGNOSTICS:
            out.append(ErrorAlternatives(d, (), f"a repair looks at the first {MOST_DIAGNOSTICS} diagnostics of a block; "
                                                "`nadc fix` reaches this one once those are mended"))
            continue
        region = BlockRegion(lines, starts[index], starts[index + 1], report, verify_options)
        ranked, seen = [], set()
        for position, (_, fix) in enumerate(error_candidates(lines, [(report, d)], allowed, frozenset(disabled))):
            try:
                result = apply_fix(text, fix)
            except (IndexError, ValueError):
                continue
            if result in seen or not budget.take():
                continue  # one alternative per text it makes (`Relu` -> `ReLU`: two kinds, one edit)
            seen.add(result)
            found = region.rank(fix, position)
            if found is not None:
                ranked.append((found[0], fix, found[0][1]))
        ranked.sort(key=lambda r: r[0])
        found = []
        for _, fix, added in ranked:
            alternative = Alternative(fix, added, _diff(text, fix))
            if complete:
                alternative = _completed(text, alternative, report.block.name, unsafe, disabled, verify_options)
            found.append(alternative)
        out.append(ErrorAlternatives(d, tuple(found)))
    return out


def _completed(text: str, alternative: Alternative, block: str, unsafe: bool, disabled: frozenset,
               options: dict) -> Alternative:
    """`alternative` with whether its block verifies once the repair goes on from it."""
    fixed = apply_fix(text, alternative.fix)
    result = repair_text(fixed, unsafe=unsafe, disabled=disabled, partial=True, **options)
    verifies = not any(d.block == block for d in result.remaining)
    return Alternative(alternative.fix, alternative.nodes_added, alternative.diff, verifies, result.applied)


def _diff(text: str, fix: Fix) -> str:
    after = apply_fix(text, fix)
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), after.splitlines(keepends=True),
                                        "before", "after", n=1))
