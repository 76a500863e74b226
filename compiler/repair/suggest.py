"""`nadc verify`'s repairs: the best fix of each error that carries none, found as `nadc fix` finds it.

Every failing file pays for these (`--no-fixes` skips them), so the search is bounded by its work, the
lines of the candidate blocks it verifies (`MOST_SUGGESTION_WORK` per file), not by a count or a
clock, and the same text always gets the same fixes. A candidate is verified on its block's lines
alone (`BlockRegion`), and a block text verified once in a process is not verified again.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from nader.dsl.diagnostics import SAFE, UNSAFE, Diagnostic

from ..passes.verify import BlockReport
from .region import BlockRegion
from .search import MOST_DIAGNOSTICS, MOST_ERRORS, Budget, candidates

#: Lines of candidate blocks `suggest_fixes` may verify per file of up to 2,000 characters (fewer for a
#: larger file): the 16 verifications of a large block of NADER's (60 lines) it once had, more of a small one.
MOST_SUGGESTION_WORK = 960

BOTH = frozenset({SAFE, UNSAFE})


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
    budget = Budget(text, MOST_SUGGESTION_WORK)
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    for index, report in enumerate(reports):
        if report.ok or not starts[index] < starts[index + 1]:
            continue
        region = BlockRegion(lines, starts[index], starts[index + 1], report, verify_options, file_level)
        cost = starts[index + 1] - starts[index]
        warnings = len(report.diagnostics) - region.before[2]
        nodes = len(report.block.nodes)
        for k, d in enumerate(report.diagnostics):
            if not d.is_error or d.fix is not None or k >= MOST_DIAGNOSTICS:
                continue
            best = None
            for position, (_, fix) in enumerate(candidates(lines, [(report, d)], BOTH, frozenset())):
                if not budget.take(cost):
                    break
                ranked = region.rank(fix, position)
                if ranked is None:
                    continue
                rank, after = ranked
                if best is None or rank < best[0]:
                    best = (rank, fix)
                if after[0][2] == 0 and after[1] <= warnings and after[2] <= nodes:
                    break  # nothing can rank better but a later, equally good candidate
            if best is not None:
                report.diagnostics[k] = replace(d, fix=best[1])
