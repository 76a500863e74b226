"""Code actions and formatting as the compiler sees them: a fix's title, the whole-file repair of
`nadc fix`, and the runs of lines `nadc fmt` changes (the server turns them into text edits)."""
from __future__ import annotations

import difflib
from typing import Iterator, Optional

from nader.compiler.passes import SQUARE, Limits
from nader.compiler.repair import repair_text
from nader.compiler.repair.config import FixConfigError, fix_config_for
from nader.dsl.diagnostics import Diagnostic, Edit, Fix
from nader.dsl.format import format_source

from .analysis import Analysis


def fix_title(analysis: Analysis, d: Diagnostic) -> str:
    """A quick fix's title: the fix's own message, else what its edit does; unsafe ones say so."""
    fix = d.fix
    title = getattr(fix, "message", "") or _edit_text(analysis, fix)
    unsafe = getattr(fix, "safety", "safe") == "unsafe"
    return f"{d.code.code}: {title}" + (" (unsafe: changes the architecture)" if unsafe else "")


def _edit_text(analysis: Analysis, fix: Fix) -> str:
    lines = analysis.lines
    if len(fix.edits) == 1:
        e: Edit = fix.edits[0]
        old = lines[e.span.line - 1][e.span.col - 1:e.span.end_col - 1] if e.span.line == e.span.end_line \
            and 0 < e.span.line <= len(lines) else ""
        if old and e.text:
            return f"replace `{old}` with `{e.text.strip()}`"
        if e.text:
            return f"insert `{e.text.strip()}`"
        if old:
            return f"remove `{old}`"
    return "apply the fix"


def repaired(analysis: Analysis) -> Optional[str]:
    """The text after `nadc fix`'s repairs (safe ones; unsafe too where `[tool.nadc.fix]` says so), or
    None when they change nothing or the configuration cannot be used."""
    try:
        config = fix_config_for(analysis.path)
    except FixConfigError:
        return None
    result = repair_text(analysis.parsed.source, unsafe=config.unsafe, disabled=config.disabled, role=None,
                         stem_stride=None, limits=Limits(), domain=SQUARE, path=analysis.path,
                         input_limits=analysis.limits)
    return result.text if result.changed else None


def format_runs(analysis: Analysis, only: Optional[tuple[int, int]] = None) -> Optional[list[tuple[int, int, str]]]:
    """The changed runs of lines that make the text canonical (`nadc fmt`): (first line, end line,
    both 0-based, end exclusive, and the new text of those lines); with `only` (first, last line,
    1-based), the runs that touch these lines. None when the text cannot be formatted."""
    result = format_source(analysis.parsed.source, analysis.path, limits=analysis.limits)
    if not result.ok:
        return None
    old, new = analysis.parsed.source.splitlines(keepends=True), result.text.splitlines(keepends=True)
    return [(i1, i2, "".join(new[j1:j2])) for i1, i2, j1, j2 in _runs(old, new)
            if only is None or not (i2 < only[0] or i1 + 1 > only[1])]


def _runs(old: list[str], new: list[str]) -> Iterator[tuple[int, int, int, int]]:
    """The changed runs of lines; a run that replaces as many lines as it has, line by line, so that
    a range format touches only the lines asked for."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            yield from ((i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1))
        elif tag != "equal":
            yield i1, i2, j1, j2
