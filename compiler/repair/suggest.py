"""`nadc verify`'s repairs: the best fix of each error that carries none, found as `nadc fix` finds it.

Every failing file pays for these (`--no-fixes` skips them), so the search is bounded by its work, the
lines of the candidate blocks it verifies (`MOST_SUGGESTION_WORK` per file), not by a count or a
clock, and the same text always gets the same fixes. Only errors some kind can answer are searched
(not one that only `drop-dead-node` answers, on a live node). A candidate is verified on its block's
lines alone, mostly as a graph (region.py), and a candidate verified once in a process is not again.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from nader.dsl.diagnostics import SAFE, UNSAFE, Diagnostic

from ..passes.structure import dead_nodes
from ..passes.verify import BlockReport
from .edit import EditorFix
from .kinds import kinds_for
from .lasting import LastingErrors
from .region import BlockRegion, tie_break
from .search import MOST_DIAGNOSTICS, MOST_ERRORS, RepairBudget, error_candidates

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
    ok = [report.ok for report in reports]
    if all(ok) or sum(d.is_error for r in reports for d in r.diagnostics) > MOST_ERRORS:
        return
    budget = RepairBudget(text, MOST_SUGGESTION_WORK)
    lines = text.split("\n")
    starts = [r.block.header_span.line for r in reports] + [len(lines) + 1]
    for index, report in enumerate(reports):
        if ok[index] or not starts[index] < starts[index + 1]:
            continue
        region = lasting = None  # made for the first candidate (a third of the blocks searched get none)
        cost = starts[index + 1] - starts[index]
        nodes = len(report.block.nodes)
        for k, d in enumerate(report.diagnostics):
            if not d.is_error or d.fix is not None or k >= MOST_DIAGNOSTICS or _hopeless(report, d):
                continue
            best = None
            for position, (_, fix) in enumerate(error_candidates(lines, [(report, d)], BOTH, frozenset(), True)):
                if not budget.take(cost):
                    break
                if region is None:
                    region = BlockRegion(lines, starts[index], starts[index + 1], report, verify_options, file_level)
                    warnings = len(report.diagnostics) - region.before[2]
                if best is not None and type(fix) is EditorFix:
                    if lasting is None:
                        lasting = LastingErrors(report)
                    if _behind(best[0], lasting.bound(fix.change), fix, nodes):
                        continue  # its lasting errors rank it behind the best: it cannot win
                ranked = region.rank(fix, position)
                if ranked is None:
                    continue
                rank, after = ranked
                if best is None or rank < best[0]:
                    best = (rank, fix)
                if after[0][2] == 0 and after[1] <= warnings and after[2] <= nodes:
                    break  # nothing can rank better but a later, equally good candidate
            if best is not None:  # `dataclasses.replace`, written out: it costs as much as a verification's checks
                report.diagnostics[k] = Diagnostic(d.code, d.message, d.span, d.help, d.file, d.block, d.secondary,
                                                   d.severity, best[1])


def _behind(best: tuple, bound, fix: EditorFix, nodes: int) -> bool:
    """Whether a later candidate whose block has at least `bound`'s errors (lasting.py) ranks behind `best`
    (`BlockRegion.rank`'s rank) whatever else it mends."""
    if bound is None or not bound[1]:
        return False
    hidden, errors, warnings, count = bound
    least = ((hidden, errors, errors, 0, 0), warnings)  # an error left: no shapes, so none unreached
    if least != best[0]:
        return least > best[0]
    return tie_break(fix, count - nodes) >= best[1:4]  # a tie: its later position loses


@lru_cache(maxsize=256)
def _answered(code: str) -> bool:
    """Whether a kind other than those answering any error (`drop-dead-node`) answers `code`."""
    return any(kind.codes != ("*",) for kind in kinds_for(code))


def _hopeless(report: BlockReport, diagnostic: Diagnostic) -> bool:
    """An error no kind answers but `drop-dead-node`, on a line whose node is not dead: nothing to search."""
    if _answered(diagnostic.code.code):
        return False
    line, dead = diagnostic.span.line, dead_nodes(report.block)
    return not any(node.span.line == line for node in report.block.nodes if node.id in dead)
