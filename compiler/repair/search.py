"""What every repair search shares: the candidates for an error, and how far the verifier gets with one.

A candidate is kept only when the verifier gets further with it (`block_progress`; engine.py's
`RepairState.progress` for a file): fewer errors that hide the checks of their line (a line that does
not parse, an unknown operation, whose parameters are then not checked), else fewer errors that stop a block before shape inference (an
unknown operation hides every shape error behind it), else fewer errors, else shape inference
reaches more nodes (it stops at the first shape error). `repair_text` (engine.py) measures a
whole file; `nadc verify`'s suggestions (suggest.py) and `nadc fix --list` (alternatives.py) measure
one block at a time (region.py), the other blocks as they are.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from nader.dsl.diagnostics import Fix, Severity
from nader.dsl.parse_codes import SYNTAX_CODES, UNKNOWN_OPERATION

from ..passes.verify import BlockReport
from .context import TARGET_WARNINGS, RepairContext
from .kinds import kinds_for

#: Diagnostics and candidates looked at per step: a bound on the work untrusted text can cause (each
#: candidate is one verification).
MOST_DIAGNOSTICS = 8
MOST_CANDIDATES = 24
#: Errors past which a file is not repaired at all: each verification would report them all again,
#: and a text that broken is not a slip to mend (fuzzing found 300-error files taking seconds).
MOST_ERRORS = 40

#: Errors that hide the checks of their line: a line that did not parse is not read at all, and a node
#: of an unknown operation has its parameters unchecked. Mending one may reveal errors it hid
#: (`2:Conv2D(kernal_size=3)`: the operation's name first, then the parameter's).
HIDING = frozenset(c.code for c in (*SYNTAX_CODES, UNKNOWN_OPERATION))


ERROR = Severity.ERROR


def hiding(diagnostics) -> int:
    return sum(d.is_error and d.code.code in HIDING for d in diagnostics)


class RepairBudget:
    """Verifications a repair may run: `most` for a file of up to 2,000 characters, fewer for a larger one
    (the work stays about the same)."""

    def __init__(self, text: str, most: int):
        self.left = max(most // 50, most * 2000 // max(2000, len(text)))

    def take(self, cost: int = 1) -> bool:
        self.left -= cost
        return self.left >= 0


def unreached(report: BlockReport) -> int:
    """Live nodes shape inference ran on but did not reach (those after its first error)."""
    shapes = report.shapes
    if shapes is None:
        return 0
    return len(shapes.order) - sum(map(shapes.shapes.__contains__, shapes.order))


def block_progress(report: BlockReport) -> tuple[int, int, int, int, int]:
    """`RepairState.progress` of one block (its diagnostics read in one pass: a candidate's block is measured so)."""
    hidden = errors = targets = 0
    for d in report.diagnostics:
        code = d.code
        if (d.severity or code.severity) is ERROR:  # `is_error`, written out
            errors += 1
            hidden += code.code in HIDING
        targets += code.code in TARGET_WARNINGS
    return hidden, errors if report.shapes is None else 0, errors, unreached(report), targets


def error_candidates(lines: Sequence[str], errors, allowed: frozenset, disabled: frozenset,
                     progress_only: bool = False) -> Iterator[tuple[str, Fix]]:
    """(code, fix) for the first of `errors` ((report, diagnostic) pairs of the file split into `lines`),
    most plausible first within each; with `progress_only`, not those a kind proves leave the verifier
    where it is (`RepairContext.progress_only`)."""
    for report, d in errors[:MOST_DIAGNOSTICS]:
        found = 0
        if d.fix is not None and d.fix.safety in allowed and d.fix.kind not in disabled:
            found += 1
            yield d.code.code, d.fix
        if report is None:
            continue
        ctx = RepairContext(lines, report, progress_only)  # its walks are memoised on the block, for all its errors
        for kind in kinds_for(d.code.code):
            if kind.safety not in allowed or kind.name in disabled:
                continue
            for fix in kind.module.candidates(ctx, d):
                if found >= MOST_CANDIDATES:
                    break
                found += 1
                yield d.code.code, fix
