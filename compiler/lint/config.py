"""Which codes `nadc lint` reports: `[tool.nadc.lint]` in pyproject.toml, and the CLI.

```toml
[tool.nadc.lint]
select = ["NAD4", "NAD115"]     # codes, prefixes (`NAD4`, `NAD40`), names, or "ALL"
ignore = ["unsorted-node-lines"]
```

The configuration of a file is the nearest `pyproject.toml` holding a
`[tool.nadc.lint]` table, looking in the file's folder and then its parents
(standard input: the working directory). `--select` replaces the
configuration's `select`, `--ignore` replaces its `ignore`. By default every
lint rule's code (NAD4xx, and NAD206 dead nodes) and every front-end warning
(NAD111, NAD115, NAD116, ...) is selected. Front-end errors are always
reported: they are not style.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional, Sequence

from nader.compiler.codes import code_table
from nader.dsl.diagnostics import Code, Diagnostic, Severity
from nader.dsl.pyproject import PyprojectError, nadc_table

from .engine import all_rules


class LintConfigError(ValueError):
    """A configuration that cannot be used: unreadable TOML, or a selector naming no code."""


def lintable_codes() -> dict[str, Code]:
    """The codes lint can report and selectors apply to: its rules' (NAD4xx, and verifier warnings
    it checks too, such as NAD206) and front-end warnings."""
    rules = all_rules()
    return {c: e for c, e in code_table().items()
            if c in rules or c.startswith("NAD4") or (c.startswith("NAD1") and e.severity is Severity.WARNING)}


def resolve_selectors(selectors: Iterable[str], origin: str) -> frozenset[str]:
    """The codes a list of selectors names. Unknown selectors are a LintConfigError."""
    table = code_table()
    out: set[str] = set()
    for raw in selectors:
        s = str(raw).strip()
        if not s:
            continue
        if s.upper() == "ALL":
            out |= set(table)
            continue
        by_prefix = {c for c in table if c.startswith(s.upper())} if s.upper().startswith("NAD") else set()
        by_name = {c for c, e in table.items() if e.name == s.lower()}
        if not (by_prefix or by_name):
            raise LintConfigError(f"{origin}: `{s}` is not a diagnostic code, prefix or name (`nadc explain` lists them)")
        out |= by_prefix | by_name
    return frozenset(out)


@dataclass(frozen=True)
class Selection:
    select: frozenset[str]
    ignore: frozenset[str]
    source: Optional[str] = None  # the pyproject.toml it came from, if any

    def __call__(self, d: Diagnostic) -> bool:
        return d.code.code in self.select and d.code.code not in self.ignore


def _split(values: Optional[Sequence[str]]) -> Optional[list[str]]:
    if values is None:
        return None
    return [part for v in values for part in str(v).split(",")]


@lru_cache(maxsize=256)
def _read(pyproject: Path) -> Optional[dict]:
    """The `[tool.nadc.lint]` table of a pyproject.toml, or None when it has none."""
    try:
        table = nadc_table(pyproject, "lint")
    except PyprojectError as error:
        raise LintConfigError(str(error)) from None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise LintConfigError(f"{pyproject}: [tool.nadc.lint] must be a table")
    for key, value in table.items():
        if key not in ("select", "ignore"):
            raise LintConfigError(f"{pyproject}: unknown key `{key}` in [tool.nadc.lint] (use `select`, `ignore`)")
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise LintConfigError(f"{pyproject}: [tool.nadc.lint] {key} must be a list of strings")
    return table


def find_config(start: Path) -> Optional[tuple[Path, dict]]:
    """The nearest pyproject.toml at or above `start` with a [tool.nadc.lint] table."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            table = _read(candidate)
            if table is not None:
                return candidate, table
    return None


def selection_for(path: str, cli_select: Optional[Sequence[str]] = None,
                  cli_ignore: Optional[Sequence[str]] = None, isolated: bool = False) -> Selection:
    """The selection for one file: its configuration, overridden by the CLI."""
    folder = Path.cwd() if path in ("-", "<stdin>") else Path(path).parent
    found = None if isolated else find_config(folder)
    table = found[1] if found else {}
    origin = str(found[0]) if found else "configuration"
    default = frozenset(lintable_codes())
    select_list = _split(cli_select) if cli_select is not None else table.get("select")
    ignore_list = _split(cli_ignore) if cli_ignore is not None else table.get("ignore")
    select = default if select_list is None else resolve_selectors(select_list, "--select" if cli_select is not None else origin)
    ignore = frozenset() if ignore_list is None else resolve_selectors(ignore_list, "--ignore" if cli_ignore is not None else origin)
    return Selection(select, ignore, str(found[0]) if found else None)
