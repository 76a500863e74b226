"""Quick fixes for the diagnostics on some lines: each one's own fix, then the other verified repairs.

`nadc verify` attaches one fix to an error, the best (`suggest_fixes`); where other repairs are as
good or nearly (narrow the layer that made a `2*C` operand, or add a 1x1 `Conv2d` before the `Add`),
an editor offers them too, each as a quick fix of its own, as `nadc fix --list` lists them
(`nader.compiler.repair.alternatives`: every one gets the verifier further in its block). Only
the errors on the lines asked about are searched, when asked: a code action request, not every
keystroke, pays for it.
"""
from __future__ import annotations

from dataclasses import replace

from nader.compiler.passes import SQUARE, Limits
from nader.compiler.repair.alternatives import fix_alternatives
from nader.dsl.diagnostics import SAFE, Diagnostic, apply_fix

from .analysis import Analysis


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
