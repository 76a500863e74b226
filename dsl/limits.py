"""Bounds on the text the front end reads, checked at the door.

Blocks come from LLM replies and fuzzers as well as from people: a 100,000-node block kept a
search busy for minutes (checking a block costs more than linear time), and a number of 4,301
digits made Python refuse to convert it. So the parser (every `nadc` command) and reply
extraction (`nader.dsl.extract`) check these limits before any costly work, with the same
codes (NAD118-NAD122): the size of the text before it is split into lines, the length of a
line and its runs of digits before the line is read, nodes and inputs while they are counted.

The defaults are far above any real block (NADER's largest has under 100 nodes). For people
who mean it, `[tool.nadc.limits]` in the nearest pyproject.toml at or above a file's folder
(standard input: the working directory) raises them; it is the one way to change them:

```toml
[tool.nadc.limits]
nodes-per-block = 10000
```
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Optional

from .parse_codes import LINE_TOO_LONG, NUMBER_TOO_LONG, TEXT_TOO_LARGE, TOO_MANY_INPUTS, TOO_MANY_NODES, Problem
from .pyproject import PyprojectError, nadc_table
from .span import ColSpan

#: The most digits a number may be allowed: Python converts numbers this long whatever its own
#: limit is set to (`sys.set_int_max_str_digits` accepts no lower limit).
MOST_DIGITS = sys.int_info.str_digits_check_threshold


@dataclass(frozen=True)
class InputLimits:
    """The limits of one file or reply; `DEFAULT_LIMITS` unless configured."""

    nodes_per_block: int = 2_000
    inputs_per_node: int = 512
    digits_per_number: int = 32
    line_length: int = 4_096
    text_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if min(self.nodes_per_block, self.inputs_per_node, self.digits_per_number, self.line_length,
               self.text_bytes) < 1 or self.digits_per_number > MOST_DIGITS:
            raise ValueError(f"limits are positive, and at most {MOST_DIGITS} digits per number: {self}")

    def lowered(self) -> bool:
        """Whether the line checks are stricter than the defaults: the parser's interned lines were
        checked against the defaults only, so every line is checked again."""
        return self.digits_per_number < DEFAULT_LIMITS.digits_per_number or \
            self.line_length < DEFAULT_LIMITS.line_length


DEFAULT_LIMITS = InputLimits()

#: (key in `[tool.nadc.limits]`, field, what it bounds, code): the table of docs/language.md.
LIMITS = (
    ("nodes-per-block", "nodes_per_block", "node lines in one block", "NAD118"),
    ("inputs-per-node", "inputs_per_node", "edges into one node (each source of `a,b->c` counts)", "NAD119"),
    ("digits-per-number", "digits_per_number", f"digits in a run (a number or an id); at most {MOST_DIGITS}",
     "NAD120"),
    ("line-length", "line_length", "characters in one line", "NAD121"),
    ("text-bytes", "text_bytes", "bytes (UTF-8) of a file or an LLM reply", "NAD122"),
)


def limits_markdown() -> str:
    """The markdown table of the limits and their defaults (docs/language.md holds it; a test compares)."""
    rows = ["| `[tool.nadc.limits]` key | default | bounds | code |", "|---|---|---|---|"]
    for key, attr, what, code in LIMITS:
        rows.append(f"| `{key}` | {getattr(DEFAULT_LIMITS, attr):,} | {what} | {code} |")
    return "\n".join(rows) + "\n"


@lru_cache(maxsize=8)
def long_digits(limit: int) -> re.Pattern:
    """A run of more than `limit` digits."""
    return re.compile(f"[0-9]{{{limit + 1},}}")


def text_size(text: str) -> int:
    """The UTF-8 size of `text` (encoded only when it is not ASCII)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def text_problem(size: int, limits: InputLimits) -> Optional[Problem]:
    """NAD122 for a text of `size` bytes past the limit."""
    if size <= limits.text_bytes:
        return None
    return Problem(TEXT_TOO_LARGE, ColSpan(1, 1), f"the text is {size:,} bytes, more than the limit of "
                   f"{limits.text_bytes:,}", "split it into smaller files, or raise `text-bytes` in [tool.nadc.limits]")


def line_problem(line: str, limits: InputLimits) -> Optional[Problem]:
    """NAD121 for a line past the length limit, NAD120 for one with a run of digits past the digit limit:
    checked before the line is read (no number of it converted yet)."""
    length = len(line)
    if length > limits.line_length:
        at = limits.line_length + 1
        return Problem(LINE_TOO_LONG, ColSpan(at, at + 1), f"the line has {length:,} characters, more than the "
                       f"limit of {limits.line_length:,}",
                       "shorten it (an edge with many sources can be several edge lines), or raise `line-length` in "
                       "[tool.nadc.limits]")
    if length > limits.digits_per_number:
        run = long_digits(limits.digits_per_number).search(line)
        if run is not None:
            return Problem(NUMBER_TOO_LONG, ColSpan(run.start() + 1, run.end() + 1),
                           f"a number of {run.end() - run.start():,} digits, more than the limit of "
                           f"{limits.digits_per_number}",
                           f"write a number of at most {limits.digits_per_number} digits, or raise "
                           f"`digits-per-number` in [tool.nadc.limits] (at most {MOST_DIGITS})")
    return None


def nodes_problem(block: str, cols: ColSpan, limits: InputLimits) -> Problem:
    """NAD118 at the first node line past the limit of block `block`."""
    return Problem(TOO_MANY_NODES, cols, f"block `{block}` has more than {limits.nodes_per_block:,} nodes; "
                   "the file is read no further",
                   "split the block, or raise `nodes-per-block` in [tool.nadc.limits]")


def inputs_problem(target, cols: ColSpan, limits: InputLimits) -> Problem:
    """NAD119 at the edge line that takes node `target` past the limit."""
    return Problem(TOO_MANY_INPUTS, cols, f"node `{target}` has more than {limits.inputs_per_node:,} inputs; "
                   "the file's blocks are not checked", "merge the inputs in stages (several `Add` or `concat` nodes), "
                   "or raise `inputs-per-node` in [tool.nadc.limits]")


#: the most any limit may be raised to
MOST_LIMIT = 2**31 - 1


class LimitsError(ValueError):
    """A `[tool.nadc.limits]` table that cannot be used."""


def read_limits(table: object, origin: str) -> InputLimits:
    """The limits a `[tool.nadc.limits]` table sets (the defaults for the keys it leaves out)."""
    if not isinstance(table, dict):
        raise LimitsError(f"{origin}: [tool.nadc.limits] must be a table")
    by_key = {key: attr for key, attr, _, _ in LIMITS}
    values = {}
    for key, value in table.items():
        if key not in by_key:
            raise LimitsError(f"{origin}: unknown key `{key}` in [tool.nadc.limits] (use {', '.join(by_key)})")
        if type(value) is not int or value < 1:
            raise LimitsError(f"{origin}: [tool.nadc.limits] {key} must be a positive integer")
        if value > MOST_LIMIT:  # a size past what a read takes (OverflowError) or a machine holds
            raise LimitsError(f"{origin}: [tool.nadc.limits] {key} may be at most {MOST_LIMIT:,}")
        values[by_key[key]] = value
    if values.get("digits_per_number", 0) > MOST_DIGITS:
        raise LimitsError(f"{origin}: [tool.nadc.limits] digits-per-number may be at most {MOST_DIGITS}")
    return replace(DEFAULT_LIMITS, **values)


@lru_cache(maxsize=256)
def _configured(pyproject: Path) -> Optional[InputLimits]:
    try:
        table = nadc_table(pyproject, "limits")
    except PyprojectError as error:
        raise LimitsError(str(error)) from None
    return None if table is None else read_limits(table, str(pyproject))


@lru_cache(maxsize=256)
def _limits_in(folder: Path) -> InputLimits:
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            found = _configured(pyproject)
            if found is not None:
                return found
    return DEFAULT_LIMITS


def limits_for(path: str) -> InputLimits:
    """The limits of a file: `[tool.nadc.limits]` of the nearest pyproject.toml that has the table, at or
    above the file's folder (standard input, `-`: the working directory). Raises LimitsError."""
    if path in ("-", "<stdin>"):
        return _limits_in(Path.cwd().resolve())
    return _limits_of_folder(os.path.dirname(path), os.getcwd())


@lru_cache(maxsize=256)
def _limits_of_folder(folder: str, cwd: str) -> InputLimits:
    """`_limits_in` by the folder as written: resolving a path costs a system call per component,
    and the files of one command mostly share a few folders."""
    return _limits_in(Path(folder or ".").resolve())

