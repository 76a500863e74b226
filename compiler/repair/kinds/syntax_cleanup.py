"""Mend a line that does not parse by removing what models add around the language (NAD101)."""
from __future__ import annotations

import re

from nader.dsl.diagnostics import SAFE, Edit, Fix
from nader.dsl.span import Span

from ..kind import FixKind

KIND = FixKind("syntax-cleanup", SAFE, ("NAD101",),
               "Remove list markers, quotes, a trailing `;` or `,`, and a comma before `)` from a line that does not parse.", """
    Replies written like code or markdown carry `- 2:ReLU`, `2:Conv2d(out_channels='C')`,
    `2->1;` or `Conv2d(out_channels=C,)`. Each cleanup is tried alone, then all together; a
    candidate is kept only if the line then parses and the file verifies better. Safe: the
    characters removed carry no meaning in the language.
""", order=1)

CLEANUPS = (
    ("a list marker", re.compile(r"^[ \t]*(?:[-*+•]|\d+[.)])[ \t]+(?=[A-Za-z0-9_#])"), ""),
    ("quotes", re.compile(r"['\"`]"), ""),
    ("a trailing `;` or `,`", re.compile(r"[ \t]*[;,][ \t]*$"), ""),
    ("a comma before `)`", re.compile(r",[ \t]*\)"), ")"),
)


def candidates(ctx, diagnostic):
    line_no = diagnostic.span.line
    if not 1 <= line_no <= len(ctx.lines):
        return
    line = ctx.lines[line_no - 1].rstrip("\r")
    code, hash_, comment = line.partition("#") if not line.lstrip().startswith("#") else (line, "", "")
    tried = set()
    steps = []
    everything = code
    for what, pattern, replacement in CLEANUPS:
        once = pattern.sub(replacement, code)
        if once != code:
            steps.append(what)
            everything = pattern.sub(replacement, everything)
            if once not in tried:
                tried.add(once)
                yield _fix(line_no, line, once + hash_ + comment, what)
    if len(steps) > 1 and everything not in tried:
        yield _fix(line_no, line, everything + hash_ + comment, ", ".join(steps))


def _fix(line_no: int, old: str, new: str, what: str) -> Fix:
    return Fix((Edit(Span(line_no, 1, line_no, len(old) + 1), new.rstrip()),), KIND.name, SAFE,
               f"remove {what} from line {line_no}: `{new.strip()}`")
