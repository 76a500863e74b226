"""Diagnostics and the one table of their codes.

Ranges: NAD1xx syntax (front end), NAD2xx structure, NAD3xx shapes,
NAD4xx style (lint). A code is declared with `define_code` in the module that
implements its rule, documentation beside it (what it does / why / example /
fix), which `nadc explain` prints. `code_table()` imports those modules so
the table is complete.
"""
from __future__ import annotations

import enum
import importlib
import textwrap
from dataclasses import dataclass, field
from typing import Optional

from .span import NO_SPAN, Span


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Code:
    code: str  # "NAD104"
    name: str  # "unknown-operation"
    severity: Severity
    summary: str
    doc: str  # markdown: what it does / why / example / fix

    def __str__(self) -> str:
        return self.code

    def explain(self) -> str:
        return f"# {self.code} ({self.name})\n\nDefault severity: {self.severity}. {self.summary}\n\n{self.doc.strip()}\n"


_TABLE: dict[str, Code] = {}

# Modules that declare codes; importing them fills the table.
RULE_MODULES = (
    "nader.dsl.parser",
    "nader.compiler.passes",
    "nader.compiler.lint",
)


def define_code(code: str, name: str, severity: Severity, summary: str, doc: str) -> Code:
    if code in _TABLE:
        raise ValueError(f"diagnostic code {code} declared twice")
    if any(c.name == name for c in _TABLE.values()):
        raise ValueError(f"diagnostic name {name} declared twice")
    entry = Code(code, name, severity, summary, textwrap.dedent(doc).strip())
    _TABLE[code] = entry
    return entry


def code_table() -> dict[str, Code]:
    for module in RULE_MODULES:
        importlib.import_module(module)
    return dict(sorted(_TABLE.items()))


def find_code(text: str) -> Optional[Code]:
    """A code by its number (`NAD104`, `nad104`) or its name (`unknown-operation`)."""
    table = code_table()
    key = text.strip()
    return table.get(key.upper()) or next((c for c in table.values() if c.name == key.lower()), None)


@dataclass(frozen=True)
class Label:
    """A secondary location with its own short message."""

    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: Code
    message: str
    span: Span = NO_SPAN
    help: Optional[str] = None
    file: Optional[str] = None
    block: Optional[str] = None
    secondary: tuple[Label, ...] = ()
    severity: Optional[Severity] = None  # None: the code's default

    @property
    def level(self) -> Severity:
        return self.severity or self.code.severity

    @property
    def is_error(self) -> bool:
        return self.level is Severity.ERROR

    def located(self, file: Optional[str] = None, block: Optional[str] = None) -> "Diagnostic":
        return Diagnostic(self.code, self.message, self.span, self.help, file or self.file,
                          block if block is not None else self.block, self.secondary, self.severity)

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
        }


def sort_key(d: Diagnostic) -> tuple:
    return (d.file or "", d.span.line, d.span.col, d.code.code)


@dataclass
class DiagnosticSink:
    """Collects diagnostics for one file."""

    file: Optional[str] = None
    items: list[Diagnostic] = field(default_factory=list)

    def emit(self, code: Code, message: str, span: Span, help: Optional[str] = None,
             block: Optional[str] = None, secondary: tuple[Label, ...] = ()) -> None:
        self.items.append(Diagnostic(code, message, span, help, self.file, block, secondary))

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.items)
