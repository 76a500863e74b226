"""Code actions and formatting as the compiler sees them: a fix's title, the quick fixes of some
lines, the whole-file repair of `nadc fix`, and the runs of lines `nadc fmt` changes (the server
turns them into text edits).

The quick fixes are each diagnostic's own fix, then the other verified repairs of its errors:
`nadc verify` attaches one fix to an error, the best (`suggest_fixes`); where other repairs are as
good or nearly (narrow the layer that made a `2*C` operand, or add a 1x1 `Conv2d` before the
`Add`), an editor offers them too, each as a quick fix of its own, as `nadc fix --list` lists them
(`nader.compiler.repair.alternatives`: every one gets the verifier further in its block). Only the
errors on the lines asked about are searched, when asked: a code action request, not every
keystroke, pays for it."""
from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Iterator, Optional

from nader.compiler.passes import SQUARE, Limits
from nader.compiler.repair import repair_text
from nader.compiler.repair.alternatives import fix_alternatives
from nader.compiler.repair.config import FixConfigError, fix_config_for
from nader.dsl.diagnostics import SAFE, Diagnostic, Edit, Fix, apply_fix
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


def quick_fixes(analysis: Analysis, first: int, last: int) -> list[tuple[Diagnostic, bool]]:
    """(a diagnostic carrying one fix, whether it is the preferred action) for each fix of the diagnostics
    on lines `first` to `last` (1-based): a diagnostic's own fix first (preferred where safe), then the
    other verified repairs of each error there, best first, each once."""
    shown = [d for d in analysis.diagnostics if d.span.end_line >= first and d.span.line <= last]
    out = [(d, getattr(d.fix, "safety", SAFE) == SAFE) for d in shown if d.fix is not None]
    if not any(d.is_error for d in shown):
        return out
    text = analysis.parsed.source
    offered = {_key(d): {apply_fix(text, d.fix)} if d.fix is not None else set() for d in shown}
    found = fix_alternatives(text, complete=False, lines=(first, last), role=None, stem_stride=None,
                             limits=Limits(), domain=SQUARE, path=analysis.path, input_limits=analysis.limits)
    own = {_key(d): d for d in shown}
    for entry in found:
        d = own.get(_key(entry.diagnostic))
        if d is None:
            continue
        for alternative in entry.alternatives:
            result = apply_fix(text, alternative.fix)
            if result not in offered[_key(d)]:  # one action per text it makes
                offered[_key(d)].add(result)
                out.append((replace(d, fix=alternative.fix), False))
    return out


def _key(d: Diagnostic) -> tuple:
    return d.code.code, d.span, d.message


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
