"""The repair loop: propose fixes for each error, keep the one that verifies best, repeat.

Each step verifies the text, asks the fix kinds (and the diagnostics' own fixes) for
candidates, applies each one, verifies the result and keeps the best candidate: the most
progress (below), then fewest warnings, then fewest nodes added, then safe before unsafe, then the kind's
order. A candidate is kept only when the verifier gets further with it (`_State.progress`): fewer
errors that stop a block before shape inference (an unknown operation hides every shape error
behind it), else fewer errors, else shape inference reaches more nodes (it stops at the first
shape error). That order only falls, so the loop ends.
Safe fixes run to a fixed point first; unsafe ones only when asked. Everything is in a fixed
order, so the same text always gets the same repair.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Optional, Sequence

from nader.dsl.diagnostics import SAFE, UNSAFE, Diagnostic, Edit, Fix, apply_fix, sort_key
from nader.dsl.limits import DEFAULT_LIMITS
from nader.dsl.parser import parse
from nader.dsl.span import Span

from ..passes.contract import SQUARE
from ..passes.shapes import Limits
from ..passes.verify import BlockReport, verify_block, verify_program
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


#: Errors past which a file is not repaired at all: each verification would report them all again,
#: and a text that broken is not a slip to mend (fuzzing found 300-error files taking seconds).
MOST_ERRORS = 40
#: Verifications `suggest_fixes` may run per file: `nadc verify` pays them on every failing file.
MOST_SUGGESTION_VERIFICATIONS = 16


class _Budget:
    def __init__(self, text: str, most: int = MOST_VERIFICATIONS):
        # a larger file gets fewer verifications: the work stays about the same
        self.left = max(most // 50, most * 2000 // max(2000, len(text)))

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
    def progress(self) -> tuple[int, int, int]:
        stopped = sum(report is None or report.shapes is None for report, _ in self.errors)
        return stopped, len(self.errors), sum(map(_unreached, self.reports))

    @property
    def score(self) -> tuple[int, int, int, int]:
        return self.progress + (self.warnings,)


def _unreached(report: BlockReport) -> int:
    """Live nodes shape inference ran on but did not reach (those after its first error)."""
    if report.shapes is None:
        return 0
    return sum(i not in report.shapes.shapes for i in report.shapes.order)


def _block_progress(report: BlockReport) -> tuple[int, int, int]:
    """`_State.progress` of one block."""
    errors = sum(d.is_error for d in report.diagnostics)
    return errors if report.shapes is None else 0, errors, _unreached(report)


def _verify(text: str, options: dict) -> _State:
    options = dict(options)
    parsed = parse(text, options.pop("path", "<string>"), options.pop("input_limits", DEFAULT_LIMITS))
    reports, file_level = verify_program(parsed, **options)
    return _state(text, reports, file_level)


def _state(text: str, reports: list[BlockReport], file_level: Sequence[Diagnostic]) -> _State:
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
    """The best (new state, applied fix) from one candidate, or None when none gets the verifier further."""
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
        if after.progress >= state.progress:
            continue
        kind = kinds.get(fix.kind)
        rank = (after.score, after.nodes - state.nodes, fix.safety != SAFE, kind.order if kind else 50, index)
        if best is None or rank < best[0]:
            best = (rank, after, AppliedFix(code, fix.kind, fix.safety, fix.message))
    return None if best is None else best[1:]


def repair_text(text: str, *, unsafe: bool = False, disabled: frozenset = frozenset(), **verify_options) -> RepairResult:
    """Repair the errors of a block file's text with safe fixes (and unsafe ones when `unsafe`).

    `disabled` names fix kinds not to use; `verify_options` are `verify_program`'s (role,
    stem_stride, limits, domain), and `input_limits` and `path` for the parser. The result holds
    the repaired text, the fixes applied and the errors that remain; the same text and options
    always give the same result. A file with more than MOST_ERRORS errors is left as it is. The
    result's `stopped` says when the repair stopped before a fixed point: `errors` (too many to
    start), `budget` (MOST_VERIFICATIONS ran out), `steps` (MOST_STEPS fixes applied).
    """
    state = _verify(text, verify_options)
    budget = _Budget(text)
    applied: list[AppliedFix] = []
    if len(state.errors) > MOST_ERRORS:
        return RepairResult(text, text, (), tuple(d for _, d in state.errors), stopped="errors")
    phases = (frozenset({SAFE}), frozenset({SAFE, UNSAFE})) if unsafe else (frozenset({SAFE}),)
    for allowed in phases:
        while state.errors and len(applied) < MOST_STEPS:
            step = _step(state, allowed, frozenset(disabled), verify_options, budget)
            if step is None:
                break
            state, fix = step
            applied.append(fix)
    # why it stopped short of a fixed point, if it did: `nadc fix` runs again on the result, or says so
    stopped = "budget" if budget.left < 0 else "steps" if state.errors and len(applied) >= MOST_STEPS else None
    return RepairResult(text, state.text, tuple(applied), tuple(d for _, d in state.errors), stopped=stopped)


def _block_after(lines: list[str], start: int, end: int, fix: Fix, options: dict) -> Optional[tuple[tuple, int, int]]:
    """(progress, warnings, nodes) of the block on lines [start, end) of a file, once `fix` is applied to
    it, parsed and verified alone; None when the fix reaches outside the block or the lines no longer
    form one block. What a suggestion is ranked by: it edits one block, the others stay as they are."""
    if any(e.span.line < start or e.span.end_line > end for e in fix.edits):
        return None
    shift = start - 1
    moved = Fix(tuple(Edit(Span(e.span.line - shift, e.span.col, e.span.end_line - shift, e.span.end_col), e.text)
                      for e in fix.edits))
    region = "\n".join(lines[start - 1:end - 1]) + ("\n" if end - 1 < len(lines) else "")
    options = dict(options)
    parsed = parse(apply_fix(region, moved), options.pop("path", "<string>"), options.pop("input_limits", DEFAULT_LIMITS))
    if len(parsed.program.blocks) != 1:
        return None
    block = parsed.program.blocks[0]
    report = verify_block(block, role=options.get("role"), stem_stride=options.get("stem_stride", 1),
                          limits=options.get("limits", Limits()), file=parsed.program.path,
                          front_end=tuple(parsed.diagnostics), domain=options.get("domain", SQUARE))
    progress = _block_progress(report)
    return progress, len(report.diagnostics) - progress[1], len(block.nodes)


def suggest_fixes(text: str, reports: list[BlockReport], file_level: Sequence[Diagnostic] = (),
                  **verify_options) -> None:
    """Attach to each error of `reports` (verified from `text` with `verify_options`; `file_level`: the
    file's own diagnostics) that carries no fix the best fix the kinds offer (safe or unsafe) with
    which the verifier gets further in its block (as `repair_text` measures it); `nadc verify` shows them.

    The reports' diagnostics are replaced in place; valid blocks cost nothing.
    """
    if all(report.ok for report in reports):
        return
    if sum(d.is_error for r in reports for d in r.diagnostics) > MOST_ERRORS:
        return
    budget = _Budget(text, MOST_SUGGESTION_VERIFICATIONS)
    kinds = all_kinds()
    lines = text.split("\n")
    both = frozenset({SAFE, UNSAFE})
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        before = _block_progress(report)
        for k, d in enumerate(report.diagnostics):
            if not d.is_error or d.fix is not None or k >= MOST_DIAGNOSTICS:
                continue
            best = None
            single = _State(text, reports, [(report, d)], 0)
            for position, (_, fix) in enumerate(_candidates(single, both, frozenset())):
                if not budget.take():
                    break
                try:
                    after = _block_after(lines, starts[index], starts[index + 1], fix, verify_options)
                except (IndexError, ValueError):
                    continue
                if after is None or after[0] >= before:
                    continue
                kind = kinds.get(fix.kind)
                rank = (after[:2], after[2] - len(report.block.nodes), fix.safety != SAFE,
                        kind.order if kind else 50, position)
                if best is None or rank < best[0]:
                    best = (rank, fix)
                if after[0][1] == 0 and after[2] <= len(report.block.nodes):
                    break  # nothing can rank better but a later, equally good candidate
            if best is not None:
                report.diagnostics[k] = replace(d, fix=best[1])
