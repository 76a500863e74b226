"""Diagnostics and the one table of their codes.

Ranges: NAD1xx syntax (front end), NAD2xx structure, NAD3xx shapes,
NAD4xx style (lint). A code is declared with `define_code` in the module that
implements its rule, documentation beside it (what it does / why / example /
fix), which `nadc explain` prints; declaring registers it here. This floor
cannot import the compiler's modules that declare codes, so
`registered_codes()` holds the codes of the modules imported so far: the
complete table is `nader.compiler.codes.code_table()`, which imports them all.

A diagnostic may carry a `Fix`: text edits that, applied to the file
(`apply_fix`), make it go away without introducing a syntax error. The code
declares whether its diagnostics carry one (`FixAvailability`); help text that
proposes replacement text comes with the fix that writes it, any other help is
advice.
"""
from __future__ import annotations

import enum
from itertools import accumulate
import textwrap
from dataclasses import dataclass, field
from typing import Optional

from .span import NO_SPAN, Span

_new_object = object.__new__


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"

    def __str__(self) -> str:
        return self.value


class FixAvailability(str, enum.Enum):
    NEVER = "never"  # the help is advice
    SOMETIMES = "sometimes"  # a fix where one is certain (e.g. a close name exists)
    ALWAYS = "always"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Code:
    """A diagnostic code of the table: its number, name, default severity and documentation."""

    code: str  # "NAD104"
    name: str  # "unknown-operation"
    severity: Severity
    summary: str
    doc: str  # markdown: what it does / why / example / fix
    fix: FixAvailability = FixAvailability.NEVER

    def __str__(self) -> str:
        return self.code

    def explain(self) -> str:
        fix = {FixAvailability.NEVER: "", FixAvailability.SOMETIMES: " Some diagnostics carry a machine-applicable fix.",
               FixAvailability.ALWAYS: " Diagnostics carry a machine-applicable fix."}[self.fix]
        return (f"# {self.code} ({self.name})\n\nDefault severity: {self.severity}. {self.summary}{fix}\n\n"
                f"{self.doc.strip()}\n")


_TABLE: dict[str, Code] = {}


def define_code(code: str, name: str, severity: Severity, summary: str, doc: str,
                fix: FixAvailability = FixAvailability.NEVER) -> Code:
    if code in _TABLE:
        raise ValueError(f"diagnostic code {code} declared twice")
    if any(c.name == name for c in _TABLE.values()):
        raise ValueError(f"diagnostic name {name} declared twice")
    entry = Code(code, name, severity, summary, textwrap.dedent(doc).strip(), fix)
    _TABLE[code] = entry
    return entry


def registered_codes() -> dict[str, Code]:
    """The codes declared so far, by number: those of the modules imported. Every code is in
    `nader.compiler.codes.code_table()`."""
    return dict(sorted(_TABLE.items()))


@dataclass(frozen=True)
class Label:
    """A secondary location with its own short message."""

    span: Span
    message: str


@dataclass(frozen=True)
class Edit:
    """Replace the text of `span` (end exclusive; empty: insert) by `text`."""

    span: Span
    text: str

    def to_json(self) -> dict:
        return {"line": self.span.line, "col": self.span.col, "end_line": self.span.end_line,
                "end_col": self.span.end_col, "text": self.text}


#: A fix's safety: a safe one keeps the block's meaning (its canonical hash, where the block is
#: valid); an unsafe one changes the architecture, minimally, and is applied only when asked.
SAFE = "safe"
UNSAFE = "unsafe"
SAFETIES = (SAFE, UNSAFE)


@dataclass(frozen=True)
class Fix:
    """Edits that make a diagnostic go away; they never overlap.

    `kind` names the repair (`close-parameter-name`, `merge-inputs-add`; `nadc explain KIND`
    documents it), `safety` is `safe` or `unsafe`, `message` says in one line what it does.
    """

    edits: tuple[Edit, ...]
    kind: str = "edit"
    safety: str = SAFE
    message: str = ""

    @classmethod
    def replace(cls, span: Span, text: str, *, kind: str = "edit", safety: str = SAFE, message: str = "") -> "Fix":
        return cls((Edit(span, text),), kind, safety, message)

    def to_json(self) -> dict:
        return {"kind": self.kind, "safety": self.safety, "message": self.message,
                "edits": [e.to_json() for e in self.edits]}

    @classmethod
    def from_json(cls, obj: dict) -> "Fix":
        """The fix `to_json` wrote (a diagnostic's `fix` in `--format json`); ValueError when malformed."""
        try:
            edits = tuple(Edit(Span(int(e["line"]), int(e["col"]), int(e["end_line"]), int(e["end_col"])),
                               str(e["text"])) for e in obj["edits"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a fix: {error}") from None
        if any(min(e.span) < 1 or (e.span.end_line, e.span.end_col) < (e.span.line, e.span.col) for e in edits):
            raise ValueError("not a fix: an edit's span is out of order")
        safety = str(obj.get("safety", SAFE))
        if safety not in SAFETIES:
            raise ValueError(f"not a fix: safety `{safety}`")
        return cls(edits, str(obj.get("kind", "edit")), safety, str(obj.get("message", "")))


def apply_fix(text: str, fix: Fix) -> str:
    """`text` with the fix's edits applied.

    Lines are split at `\n` as the parser does; columns count characters from 1.
    A position on the line after the last one is the end of the text (a line
    break is added first when the text does not end with one).
    """
    if fix.edits and max(e.span.line for e in fix.edits) > text.count("\n") + 1 and not text.endswith("\n"):
        text += "\n"
    starts = [0, *accumulate(len(line) + 1 for line in text.split("\n")[:-1])]

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col - 1 if line <= len(starts) else len(text)

    out = text
    for e in sorted(fix.edits, key=lambda e: (e.span.line, e.span.col), reverse=True):
        start, end = offset(e.span.line, e.span.col), offset(e.span.end_line, e.span.end_col)
        out = out[:start] + e.text + out[end:]
    return out


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a file: its code, where it is, what is wrong and how to fix it."""

    code: Code
    message: str
    span: Span = NO_SPAN
    help: Optional[str] = None
    file: Optional[str] = None
    block: Optional[str] = None
    secondary: tuple[Label, ...] = ()
    severity: Optional[Severity] = None  # None: the code's default
    fix: Optional[Fix] = None

    @property
    def level(self) -> Severity:
        return self.severity or self.code.severity

    @property
    def is_error(self) -> bool:
        return (self.severity or self.code.severity) is Severity.ERROR  # `level`, written out: asked of every diagnostic

    def located(self, file: Optional[str] = None, block: Optional[str] = None) -> "Diagnostic":
        return Diagnostic(self.code, self.message, self.span, self.help, file or self.file,
                          block if block is not None else self.block, self.secondary, self.severity, self.fix)

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "block": self.block,
            "line": self.span.line,
            "col": self.span.col,
            "end_line": self.span.end_line,
            "end_col": self.span.end_col,
            "code": self.code.code,
            "name": self.code.name,
            "severity": self.level.value,
            "message": self.message,
            "help": self.help,
            "related": [{"line": l.span.line, "col": l.span.col, "end_line": l.span.end_line,
                         "end_col": l.span.end_col, "message": l.message} for l in self.secondary],
            "fix": self.fix.to_json() if self.fix is not None else None,
        }


#: A diagnostic of each code and no words (`CountingSink`).
_CODED: dict[str, Diagnostic] = {}


def sort_key(d: Diagnostic) -> tuple:
    return (d.file or "", d.span.line, d.span.col, d.code.code)


@dataclass
class DiagnosticSink:
    """Collects diagnostics for one file."""

    file: Optional[str] = None
    items: list[Diagnostic] = field(default_factory=list)
    counting = False  # `CountingSink`

    def wants(self, code: Code) -> bool:
        """Whether a diagnostic of `code` is to be written in full (`emit`): yes, but in a `CountingSink`."""
        return True

    def emit(self, code: Code, message: str, span: Span, help: Optional[str] = None,
             block: Optional[str] = None, secondary: tuple[Label, ...] = (), fix: Optional[Fix] = None) -> None:
        # The Diagnostic its constructor builds, its fields set at once: a frozen dataclass's __init__ sets
        # each through `object.__setattr__` (a third of the cost of a check that reports, and the repair
        # verifies several candidates per error).
        made = _new_object(Diagnostic)
        made.__dict__.update(code=code, message=message, span=span, help=help, file=self.file, block=block,
                             secondary=secondary, severity=None, fix=fix)
        self.items.append(made)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.items)


class CountingSink(DiagnosticSink):
    """A sink that keeps each diagnostic's code alone (a diagnostic of no words, shared): a check asks it
    first (`wants`) and skips the words. A repair's candidate is verified for how far the verifier gets with
    it (codes and counts), and most are never shown."""

    counting = True

    def wants(self, code: Code) -> bool:
        found = _CODED.get(code.code)
        if found is None:
            found = _CODED[code.code] = Diagnostic(code, "")
        self.items.append(found)
        return False
