"""The repair loop: propose fixes for each error, keep the one that verifies best, repeat.

Each step verifies the text, asks the fix kinds (and the diagnostics' own fixes) for
candidates, applies each one, verifies the result and keeps the best candidate: the most
progress (below), then fewest warnings, then fewest nodes added, then safe before unsafe, then the kind's
order. A candidate is kept only when the verifier gets further with it (`_State.progress`): fewer
errors that hide the checks of their line (a line that does not parse, an unknown operation,
whose parameters are then not checked), else fewer errors that stop a block before shape
inference (an unknown operation hides every shape error behind it), else fewer errors, else shape
inference reaches more nodes (it stops at the first shape error). That order only falls, so the
loop ends. Safe fixes run to a fixed point first; unsafe ones only when asked. Everything is in a
fixed order, so the same text always gets the same repair.

A file is repaired block by block, the last first (a block's fixes edit only its own lines, so
the blocks before it keep their line numbers). A block whose repair does not make it verify is
left as it was, with the fixes that were found reported (`RepairResult.left`), unless `partial`:
a repair that does not reach a verifying block changes a block for nothing, or for worse (a fix
of `Linear(out_channels=H*W)` once turned it into a `reshape` of size 0).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Optional, Sequence

from nader.dsl.diagnostics import SAFE, UNSAFE, Diagnostic, Edit, Fix, apply_fix, sort_key
from nader.dsl.limits import DEFAULT_LIMITS
from nader.dsl.parse_codes import SYNTAX_CODES, UNKNOWN_OPERATION
from nader.dsl.parser import parse
from nader.dsl.span import Span

from ..passes.contract import SQUARE
from ..passes.shapes import Limits
from ..passes.verify import BlockReport, verify_block, verify_program
from .context import RepairContext
from .kinds import kinds_for, order_of
from .result import AppliedFix, LeftBlock, RepairResult

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


#: Errors that hide the checks of their line: a line that did not parse is not read at all, and a node
#: of an unknown operation has its parameters unchecked. Mending one may reveal errors it hid
#: (`2:Conv2D(kernal_size=3)`: the operation's name first, then the parameter's).
HIDING = frozenset(c.code for c in (*SYNTAX_CODES, UNKNOWN_OPERATION))


def _hiding(diagnostics) -> int:
    return sum(d.is_error and d.code.code in HIDING for d in diagnostics)


class _Budget:
    def __init__(self, text: str, most: int = MOST_VERIFICATIONS):
        # a larger file gets fewer verifications: the work stays about the same
        self.left = max(most // 50, most * 2000 // max(2000, len(text)))

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


#: Warnings the repair answers too: where it can, after the errors; a block that keeps one still counts as
#: repaired. NAD318: valid, but not at the widths NAS-Bench-201's (NADER's) network builds it at.
TARGET_WARNINGS = frozenset({"NAD318"})


@dataclass
class _State:
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
        return (_hiding(d for _, d in self.errors), stopped, len(self.errors), sum(map(_unreached, self.reports)),
                len(self.targets) - len(self.errors))

    @property
    def score(self) -> tuple[int, ...]:
        return self.progress + (self.warnings,)


def _unreached(report: BlockReport) -> int:
    """Live nodes shape inference ran on but did not reach (those after its first error)."""
    if report.shapes is None:
        return 0
    return sum(i not in report.shapes.shapes for i in report.shapes.order)


def _block_progress(report: BlockReport) -> tuple[int, int, int, int, int]:
    """`_State.progress` of one block."""
    errors = sum(d.is_error for d in report.diagnostics)
    targets = sum(d.code.code in TARGET_WARNINGS for d in report.diagnostics)
    return _hiding(report.diagnostics), errors if report.shapes is None else 0, errors, _unreached(report), targets


def _verify(text: str, options: dict) -> _State:
    options = dict(options)
    parsed = parse(text, options.pop("path", "<string>"), options.pop("input_limits", DEFAULT_LIMITS))
    reports, file_level = verify_program(parsed, **options)
    return _state(text, reports, file_level)


def _state(text: str, reports: list[BlockReport], file_level: Sequence[Diagnostic]) -> _State:
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
    return _State(text, reports, errors, warnings, errors + sorted(targets, key=lambda rd: sort_key(rd[1])))


def _candidates(state: _State, errors, allowed: frozenset, disabled: frozenset) -> Iterator[tuple[str, Fix]]:
    """(code, fix) for the first of `errors` (some of `state.errors`), most plausible first within each."""
    lines = state.text.split("\n")
    for report, d in errors[:MOST_DIAGNOSTICS]:
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


#: When no candidate gets the verifier further, the best candidates that leave it where it was (as
#: many errors, at the same place) are each followed by one more step: a pair of fixes is kept where
#: the second then gets it further (a concat of three maps of three sizes: one operand at a time).
LOOKAHEAD = 3


def _step(state: _State, region, allowed: frozenset, disabled: frozenset, options: dict, budget: _Budget,
          lookahead: int = LOOKAHEAD) -> Optional[tuple[_State, list[AppliedFix]]]:
    """The best (new state, fixes applied) from one candidate for the errors `region(state)` picks (or,
    when none gets the verifier further, from two in a row), or None."""
    best, level = None, []
    for index, (code, fix) in enumerate(_candidates(state, region(state), allowed, disabled)):
        if not budget.take():
            break
        try:
            text = apply_fix(state.text, fix)
        except (IndexError, ValueError):
            continue
        if text == state.text:
            continue
        after = _verify(text, options)
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


def _repair_region(state: _State, region, phases, disabled: frozenset, options: dict, budget: _Budget,
                   steps: int) -> tuple[_State, list[AppliedFix]]:
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
    state = _verify(text, verify_options)
    budget = _Budget(text)
    applied: list[AppliedFix] = []
    if len(state.errors) > MOST_ERRORS:
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

        def region(s: _State, start=starts[k], after=after) -> list:
            return _in_region(s, start, after)

        def failing(s: _State, start=starts[k], after=after) -> list:
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
        if rest and fixes and not partial:
            names = [r.block.name for r in saved.reports if starts[k] <= r.block.header_span.line
                     and (after == 0 or r.block.header_span.line < _line_count(saved.text) - after + 1)]
            left.append(LeftBlock(", ".join(names) or "(file)", tuple(fixes), len(rest)))
            state, fixes = saved, []
        applied += fixes
    # why it stopped short of a fixed point, if it did: `nadc fix` runs again on the result, or says so
    stopped = "budget" if budget.left < 0 else "steps" if state.errors and len(applied) >= MOST_STEPS else None
    return RepairResult(text, state.text, tuple(applied), tuple(d for _, d in state.errors), tuple(reversed(left)),
                        stopped)


def _line_count(text: str) -> int:
    return text.count("\n") + 1


def _in_region(state: _State, start: int, after: int, what: str = "targets") -> list:
    """The errors (`what="errors"`) or targets of `state` on the lines from `start` up to the last `after`
    lines of its text."""
    end = _line_count(state.text) - after + 1 if after else float("inf")
    return [(r, d) for r, d in getattr(state, what) if start <= d.span.line < end]


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
    return progress, len(report.diagnostics) - progress[2], len(block.nodes)


def _block_rank(lines: list[str], start: int, end: int, report: BlockReport, before: tuple, fix: Fix, position: int,
                options: dict) -> Optional[tuple[tuple, tuple]]:
    """(rank, `_block_after`) of a candidate for an error of `report` (the block on lines [start, end),
    whose progress is `before`), ranked as the loop ranks: progress and warnings, nodes added, safety,
    the kind's order, `position`; None when the verifier gets no further with it."""
    try:
        after = _block_after(lines, start, end, fix, options)
    except (IndexError, ValueError):
        return None
    if after is None or after[0] >= before:
        return None
    return (after[:2], after[2] - len(report.block.nodes), fix.safety != SAFE, order_of(fix.kind), position), after


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
    lines = text.split("\n")
    both = frozenset({SAFE, UNSAFE})
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        before = _block_progress(report)
        warnings = len(report.diagnostics) - before[2]
        for k, d in enumerate(report.diagnostics):
            if not d.is_error or d.fix is not None or k >= MOST_DIAGNOSTICS:
                continue
            best = None
            single = _State(text, reports, [(report, d)], 0)
            for position, (_, fix) in enumerate(_candidates(single, single.errors, both, frozenset())):
                if not budget.take():
                    break
                ranked = _block_rank(lines, starts[index], starts[index + 1], report, before, fix, position, verify_options)
                if ranked is None:
                    continue
                rank, after = ranked
                if best is None or rank < best[0]:
                    best = (rank, fix)
                if after[0][2] == 0 and after[1] <= warnings and after[2] <= len(report.block.nodes):
                    break  # nothing can rank better but a later, equally good candidate
            if best is not None:
                report.diagnostics[k] = replace(d, fix=best[1])
