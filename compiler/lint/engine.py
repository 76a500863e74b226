"""The lint engine: running the rules (`rules/`, registered through `rule.py`'s interface) on a
block or a file, and the `# nadc: ignore[...]` suppression comments.

The interface (`Finding`, `LintContext`, `Rule`, `rule`) is re-exported here for the engine's callers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from nader.dsl.diagnostics import Diagnostic
from nader.dsl.ir import Block
from nader.dsl.parser import ParseResult

from . import rules  # noqa: F401 - importing the package loads (and so registers) every rule module
from .rule import _RULES, Finding, LintContext, Rule, consecutive_pairs, rule  # noqa: F401 (re-exported)


def all_rules() -> dict[str, Rule]:
    return dict(sorted(_RULES.items()))


# -- suppression comments ----------------------------------------------------------------

_SUPPRESS = re.compile(r"#\s*nadc:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


def suppressions(source: str) -> dict[int, Optional[frozenset[str]]]:
    """Line -> codes suppressed on it (None: all), from `# nadc: ignore[NAD401,...]` comments.

    Codes may be given by number or name; they are upper-cased numbers or lower-case names.
    """
    out: dict[int, Optional[frozenset[str]]] = {}
    for number, line in enumerate(source.split("\n"), 1):
        if "nadc" not in line:
            continue
        for m in _SUPPRESS.finditer(line):
            codes = m.group("codes")
            if codes is None or not codes.strip():
                out[number] = None
                break
            found = frozenset(c.strip().upper() if c.strip().upper().startswith("NAD") else c.strip().lower()
                              for c in codes.split(",") if c.strip())
            previous = out.get(number, frozenset())
            out[number] = None if previous is None else previous | found
    return out


def is_suppressed(d: Diagnostic, table: dict[int, Optional[frozenset[str]]]) -> bool:
    if d.span.line not in table:
        return False
    codes = table[d.span.line]
    return codes is None or d.code.code in codes or d.code.name in codes


# -- running -------------------------------------------------------------------------------

Analyzer = Callable[[Block], tuple[Optional[Any], Optional[Sequence[Diagnostic]]]]


def lint_block(block: Block, ctx: LintContext, codes: Optional[Iterable[str]] = None) -> list[Diagnostic]:
    """Run the rules (those in `codes`, default all) on one block; suppression is not applied here."""
    ctx.block = block
    wanted = None if codes is None else set(codes)
    out: list[Diagnostic] = []
    for code, r in all_rules().items():
        if wanted is not None and code not in wanted:
            continue
        if r.needs_shapes and ctx.shapes is None:
            continue
        for f in r.check(block, ctx):
            out.append(Diagnostic(r.code, f.message, f.span, f.help, ctx.file, block.name, f.secondary))
    return out


@dataclass
class FileLint:
    """The outcome of linting one parsed file."""

    result: ParseResult
    diagnostics: list[Diagnostic] = field(default_factory=list)  # reported, after selection and suppression
    suppressed: int = 0


def lint_parsed(result: ParseResult, selected: Callable[[Diagnostic], bool],
                analyze: Optional[Analyzer] = None) -> FileLint:
    """Lint one parsed file.

    Front-end diagnostics are part of lint's output: errors always (they are not
    style, and the rules cannot be trusted on a file with syntax errors, so
    the rules do not run on one), warnings (NAD111 missing header, NAD115
    alias, NAD116 extra hashes) like any lint finding, subject to selection and
    suppression. `analyze(block)` may supply (shapes, verification diagnostics).
    """
    path = result.program.path
    lines = result.source.split("\n")
    found: list[Diagnostic] = list(result.diagnostics)
    if result.syntax_ok:
        by_block: dict[Optional[str], list[Diagnostic]] = {}
        for d in result.diagnostics:
            by_block.setdefault(d.block, []).append(d)
        for block in result.program.blocks:
            shapes, verification = analyze(block) if analyze else (None, None)
            ctx = LintContext(path, block.inferred_role(), lines, tuple(by_block.get(block.name, ())),
                              shapes, verification)
            found += lint_block(block, ctx)
    table = suppressions(result.source)
    out = FileLint(result)
    for d in found:
        if d.is_error:
            out.diagnostics.append(d)
        elif not selected(d):
            continue
        elif is_suppressed(d, table):
            out.suppressed += 1
        else:
            out.diagnostics.append(d)
    return out
