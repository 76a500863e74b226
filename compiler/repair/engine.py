"""The repair loop: propose fixes for each error, keep the one that verifies best, repeat.

Each step verifies the text, asks the fix kinds (and the diagnostics' own fixes) for
candidates, applies each one, verifies the result and keeps the best candidate: the most
progress (below), then fewest warnings, then fewest nodes added, then safe before unsafe, then the kind's
order. A candidate is kept only when the verifier gets further with it (`RepairState.progress`). That order only falls, so the loop ends. Safe fixes run to a fixed point first; unsafe ones only when asked. Everything is in a
fixed order, so the same text always gets the same repair.

A file is repaired block by block, the last first (a block's fixes edit only its own lines, so
the blocks before it keep their line numbers). A block whose repair does not make it verify is
left as it was, with the fixes that were found reported (`RepairResult.left`), unless `partial`:
a repair that does not reach a verifying block changes a block for nothing, or for worse (a fix
of `Linear(out_channels=H*W)` once turned it into a `reshape` of size 0). A repair cut short by
its budget or its cap of fixes keeps what it found (`stopped` says so): `nadc fix` repairs its
result again, round after round.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from nader.dsl.diagnostics import SAFE, UNSAFE, Diagnostic, Fix, apply_fix, sort_key
from nader.dsl.limits import DEFAULT_LIMITS
from nader.dsl.parser import parse

from ..passes.verify import BlockReport, verify_program
from .context import TARGET_WARNINGS, RepairContext
from .kinds import order_of
from .kinds.drop_restatement import restatement
from .result import AppliedFix, LeftBlock, RepairResult
from .search import MOST_ERRORS, RepairBudget, hiding, unreached, error_candidates

#: Fixes applied at most per repair: a bound on the work untrusted text can cause.
MOST_STEPS = 24
#: Verifications one repair may run in all: what bounds the time a large damaged block can take (each
#: verification of a block of n nodes costs about n).
MOST_VERIFICATIONS = 400


@dataclass
class RepairState:
    text: str
    reports: list[BlockReport]
    errors: list[tuple[Optional[BlockReport], Diagnostic]]
    warnings: int
    targets: list = field(default_factory=list)  # the errors, then the warnings of TARGET_WARNINGS

    @property
    def nodes(self) -> int:
        return sum(len(r.block.nodes) for r in self.reports)

    @property
    def progress(self) -> tuple[int, int, int, int, int]:
        stopped = sum(report is None or report.shapes is None for report, _ in self.errors)
        return (hiding(d for _, d in self.errors), stopped, len(self.errors), sum(map(unreached, self.reports)),
                len(self.targets) - len(self.errors))

    @property
    def score(self) -> tuple[int, ...]:
        return self.progress + (self.warnings,)


def verify_text(text: str, options: dict) -> RepairState:
    """The state of a whole file's text verified with `options` (`verify_program`'s, `path`, `input_limits`)."""
    options = dict(options)
    parsed = parse(text, options.pop("path", "<string>"), options.pop("input_limits", DEFAULT_LIMITS))
    reports, file_level = verify_program(parsed, **options)
    return _state(text, reports, file_level)


def _state(text: str, reports: list[BlockReport], file_level: Sequence[Diagnostic]) -> RepairState:
    errors = [(None, d) for d in file_level if d.is_error]
    warnings = sum(not d.is_error for d in file_level)
    targets = []
    for report in reports:
        for d in report.diagnostics:
            if d.is_error:
                errors.append((report, d))
            else:
                warnings += 1
                if d.code.code in TARGET_WARNINGS:
                    targets.append((report, d))
    errors.sort(key=lambda rd: sort_key(rd[1]))
    return RepairState(text, reports, errors, warnings, errors + sorted(targets, key=lambda rd: sort_key(rd[1])))


#: When no candidate gets the verifier further, the best candidates that leave it where it was (as
#: many errors, at the same place) are each followed by one more step: a pair of fixes is kept where
#: the second then gets it further (a concat of three maps of three sizes: one operand at a time).
LOOKAHEAD = 3


def _step(state: RepairState, region, allowed: frozenset, disabled: frozenset, options: dict, budget: RepairBudget,
          lookahead: int = LOOKAHEAD) -> Optional[tuple[RepairState, list[AppliedFix]]]:
    """The best (new state, fixes applied) from one candidate for the errors `region(state)` picks (or,
    when none gets the verifier further, from two in a row), or None."""
    best, level = None, []
    for index, (code, fix) in enumerate(error_candidates(state.text.split("\n"), region(state), allowed, disabled)):
        if not budget.take():
            break
        try:
            text = apply_fix(state.text, fix)
        except (IndexError, ValueError):
            continue
        if text == state.text:
            continue
        after = verify_text(text, options)
        rank = (after.score, after.nodes - state.nodes, fix.safety != SAFE, order_of(fix.kind), index)
        applied = AppliedFix(code, fix.kind, fix.safety, fix.message)
        if after.progress == state.progress:
            level.append((rank, after, applied))
        if after.progress >= state.progress:
            continue
        if best is None or rank < best[0]:
            best = (rank, after, [applied])
    if best is None and lookahead:
        for _, after, applied in sorted(level, key=lambda r: r[0])[:lookahead]:
            second = _step(after, region, allowed, disabled, options, budget, lookahead=0)
            if second is not None and second[0].progress < state.progress:
                return second[0], [applied, *second[1]]
    return None if best is None else (best[1], best[2])


def _repair_region(state: RepairState, region, phases, disabled: frozenset, options: dict, budget: RepairBudget,
                   steps: int) -> tuple[RepairState, list[AppliedFix]]:
    """`state` after the fixes of the errors `region` picks, phase by phase; at most `steps` fixes."""
    applied: list[AppliedFix] = []
    for allowed in phases:
        while len(applied) < steps and region(state):
            step = _step(state, region, allowed, disabled, options, budget)
            if step is None:
                break
            state = step[0]
            applied += step[1]
    return state, applied


def repair_text(text: str, *, unsafe: bool = False, disabled: frozenset = frozenset(), partial: bool = False,
                **verify_options) -> RepairResult:
    """Repair the errors of a block file's text with safe fixes (and unsafe ones when `unsafe`).

    `disabled` names fix kinds not to use; `verify_options` are `verify_program`'s (role,
    stem_stride, limits, domain), and `input_limits` and `path` for the parser. The result holds
    the repaired text, the fixes applied and the errors that remain; the same text and options
    always give the same result. A file with more than MOST_ERRORS errors is left as it is. A block
    the repair cannot make verify is left as it was (its fixes are in `left`), unless `partial`. The
    result's `stopped` says when the repair stopped before a fixed point: `errors` (too many to
    start), `budget` (MOST_VERIFICATIONS ran out), `steps` (MOST_STEPS fixes applied).
    """
    state = verify_text(text, verify_options)
    budget = RepairBudget(text, MOST_VERIFICATIONS)
    applied: list[AppliedFix] = []
    if len(state.errors) > MOST_ERRORS and not (unsafe and restated_within(state, disabled, verify_options)):
        return RepairResult(text, text, (), tuple(d for _, d in state.errors), stopped="errors")
    both = frozenset({SAFE, UNSAFE})
    phases = (frozenset({SAFE}), both) if unsafe else (frozenset({SAFE}),)
    disabled = frozenset(disabled)
    left: list[LeftBlock] = []
    # Each block's region runs from its header to the next block's (the first from line 1).
    starts = [1] + [r.block.header_span.line for r in state.reports[1:]]
    for k in reversed(range(len(starts))):
        # lines after the region: the blocks already repaired, which this region's fixes do not move
        after = _line_count(state.text) - starts[k + 1] + 1 if k + 1 < len(starts) else 0

        def region(s: RepairState, start=starts[k], after=after) -> list:
            return _in_region(s, start, after)

        def failing(s: RepairState, start=starts[k], after=after) -> list:
            return _in_region(s, start, after, "errors")

        if not failing(state):
            continue  # a valid block is not touched, whatever its warnings
        saved = state
        state, fixes = _repair_region(saved, region, phases, disabled, verify_options, budget, MOST_STEPS - len(applied))
        if failing(state) and unsafe:
            # safe fixes first can take a road the unsafe ones cannot follow (a node deleted as dead that an
            # edge turned round would have fed): once more with both competing from the start
            again, more = _repair_region(saved, region, (both,), disabled, verify_options, budget,
                                         MOST_STEPS - len(applied))
            if not failing(again):
                state, fixes = again, more
        rest = failing(state)
        # a repair cut short (the budget or the cap of fixes ran out) keeps what it found: it has not shown
        # that the block cannot verify, and `nadc fix` goes on from there in its next round
        cut = budget.left < 0 or len(applied) + len(fixes) >= MOST_STEPS
        if rest and fixes and not partial and not cut:
            names = [r.block.name for r in saved.reports if starts[k] <= r.block.header_span.line
                     and (after == 0 or r.block.header_span.line < _line_count(saved.text) - after + 1)]
            left.append(LeftBlock(", ".join(names) or "(file)", tuple(fixes), len(rest)))
            state, fixes = saved, []
        applied += fixes
    # why it stopped short of a fixed point, if it did: `nadc fix` runs again on the result, or says so
    stopped = "budget" if budget.left < 0 else "steps" if state.errors and len(applied) >= MOST_STEPS else None
    return RepairResult(text, state.text, tuple(applied), tuple(d for _, d in state.errors), tuple(reversed(left)),
                        stopped)


def restated_within(state: RepairState, disabled: frozenset, options: dict) -> bool:
    """Whether the file has at most MOST_ERRORS errors once each block's restatement goes (`drop-restatement`'s
    cleanup: node lines defining an id again, repeated edges, edges to undefined nodes): a model that restated its parent and went on
    makes hundreds of errors (ids defined twice, edges repeated, edges to ids it never defined) that one fix
    per block mends; the repair then starts as usual, and finds that fix itself."""
    lines, edits = state.text.split("\n"), []
    for report in state.reports:
        if report.ok:
            continue
        fix = restatement(RepairContext(lines, report)) if "drop-restatement" not in disabled else None
        edits += fix.edits if fix is not None else ()
    return bool(edits) and len(verify_text(apply_fix(state.text, Fix(tuple(edits))), options).errors) <= MOST_ERRORS


def _line_count(text: str) -> int:
    return text.count("\n") + 1


def _in_region(state: RepairState, start: int, after: int, what: str = "targets") -> list:
    """The errors (`what="errors"`) or targets of `state` on the lines from `start` up to the last `after`
    lines of its text."""
    end = _line_count(state.text) - after + 1 if after else float("inf")
    return [(r, d) for r, d in getattr(state, what) if start <= d.span.line < end]
