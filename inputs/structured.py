"""Structured text from outside (JSON, TOML, CSV): nesting and numbers bounded before parsing.

Nesting is measured by a linear scanner that skips strings and comments, before the parser runs, so
a text 200,000 brackets deep is refused in one pass and no parser recursion is ever reached (a
RecursionError at the parser is still turned into InputError, as a backstop). After parsing, the
depth of the value itself is checked without recursion: TOML's dotted keys (`a.b.c...`) nest
without brackets.
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from pathlib import Path
from typing import Iterator, List, Optional, Union

from .errors import InputError
from .files import DEFAULT_MAX_BYTES, read_bounded_text

#: deeper than any configuration or cell the project writes
DEFAULT_MAX_DEPTH = 64
#: digits in one JSON number (a float has 17 significant digits; `int()` refuses 4,301)
DEFAULT_MAX_NUMBER_DIGITS = 100
#: Python's csv default, made explicit (the module's limit is process-wide)
DEFAULT_MAX_FIELD_CHARS = 131_072

_JSON_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_TOML_SKIPPED = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', re.S)
_JSON_OTHER = re.compile(r"[^\[\]{}]+")
_TOML_OTHER = re.compile(r"[^\[\]{}.=,\n]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting_depth(text: str, kind: str = "json", limit: Optional[int] = None) -> int:
    """The deepest nesting of a JSON or TOML text, strings and comments skipped; past `limit` it stops
    counting and returns `limit + 1`. Linear: strings, comments and everything but brackets are
    dropped by regular expressions first.

    In TOML a dotted key (`a.b.c = 1`, `[a.b.c]`) nests one table per dot, and tomllib's time and
    memory grow with the square of the dots of one key (200,000 of them take gigabytes): the dots of a
    key count as depth too (a float's dot after `=` or `,` only adds one). Outside strings and
    comments every bracket is structural, so a stray closing one (which the parser refuses) only
    lowers the count."""
    if kind == "json":
        marks = _JSON_OTHER.sub("", _JSON_STRINGS.sub("", text))
        return max(itertools.accumulate(map(_STEP.__getitem__, marks)), default=0)
    marks = _TOML_OTHER.sub("", _TOML_SKIPPED.sub("", text))
    depth = deepest = dots = 0
    for mark in marks:
        if mark in "[{":
            depth += 1
        elif mark in "]}":
            depth -= 1
        elif mark == ".":
            dots += 1
        else:  # `=`, `,` or a line break ends a key
            dots = 0
        if depth + dots > deepest:
            deepest = depth + dots
            if limit is not None and deepest > limit:
                return deepest
    return deepest


def check_depth(value, what: str, max_depth: int = DEFAULT_MAX_DEPTH):
    """`value` itself when its lists and dicts nest at most `max_depth` deep (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, (list, tuple)) else None
        if children is None:
            continue
        if depth > max_depth:
            raise InputError(f"{what}: nested more than {max_depth} deep; flatten it")
        stack.extend((child, depth + 1) for child in children)
    return value


def _depth_first(text: str, what: str, kind: str, max_depth: int) -> None:
    if nesting_depth(text, kind, max_depth) > max_depth:
        raise InputError(f"{what}: nested more than {max_depth} deep (brackets or dotted keys); flatten it")


def load_json(text: str, what: str, *, max_depth: int = DEFAULT_MAX_DEPTH,
              max_number_digits: int = DEFAULT_MAX_NUMBER_DIGITS, allow_nonfinite: bool = False):
    """The JSON value of `text`, nesting and number sizes bounded; NaN/Infinity refused unless allowed."""
    if not isinstance(text, str):
        raise InputError(f"{what}: expected JSON text, got {type(text).__name__}")
    _depth_first(text, what, "json", max_depth)

    def bounded(literal: str) -> str:
        if len(literal) > max_number_digits:
            raise InputError(f"{what}: a number of {len(literal):,} characters (at most {max_number_digits})")
        return literal

    def as_float(literal: str) -> float:
        value = float(bounded(literal))
        if not math.isfinite(value) and not allow_nonfinite:
            raise InputError(f"{what}: the number {literal[:20]} is out of range")
        return value

    def constant(name: str) -> float:
        if not allow_nonfinite:
            raise InputError(f"{what}: {name} is not a finite number; write a number")
        return float(name.replace("Infinity", "inf"))

    try:
        return json.loads(text, parse_int=lambda s: int(bounded(s)), parse_float=as_float, parse_constant=constant)
    except json.JSONDecodeError as error:
        raise InputError(f"{what}: not JSON: {error.msg} (line {error.lineno}, column {error.colno})") from None
    except RecursionError:
        raise InputError(f"{what}: nested too deep; flatten it") from None


def _tomllib():
    try:
        import tomllib  # read only where a TOML file is
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib


def load_toml(text_or_path: Union[str, Path], what: str, *, max_depth: int = DEFAULT_MAX_DEPTH,
              max_bytes: int = DEFAULT_MAX_BYTES, source: Optional[str] = None) -> dict:
    """The table of a TOML text (a `str`) or file (a `Path`, read through `read_bounded_text`).

    Messages start with `source` (the path, for a Path) then `what`; the depth of brackets and of
    dotted keys is bounded; TOML's `nan`/`inf` stay floats for the caller's `finite_number` to refuse."""
    if isinstance(text_or_path, Path):
        source = source or str(text_or_path)
        text = read_bounded_text(text_or_path, what, max_bytes=max_bytes)
    else:
        text = text_or_path
    label = f"{source}: the {what}" if source else what
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise InputError(f"{label} is larger than {max_bytes:,} bytes")
    _depth_first(text, label, "toml", max_depth)
    toml = _tomllib()
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as error:
        raise InputError(f"{label}: invalid TOML: {error}") from None
    except ValueError:  # int() past 4,300 digits
        raise InputError(f"{label} holds an integer of more than 4,300 digits; write a smaller number") from None
    except RecursionError:
        raise InputError(f"{label}: nested too deep; flatten it") from None
    return check_depth(data, label, max_depth)


def csv_rows(text: str, what: str, *, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
             max_rows: Optional[int] = None) -> Iterator[List[str]]:
    """The rows of a CSV text, each field at most `max_field_chars` long (header included).

    Python's csv has one process-wide field limit; this one is per call and names the row."""
    reader = csv.reader(io.StringIO(text))
    row_number = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            if "field larger than field limit" in str(error):
                raise InputError(f"{what}: a field on line {reader.line_num} is longer than the limit; "
                                 f"keep each field under {max_field_chars:,} characters") from None
            raise InputError(f"{what}: not valid CSV on line {reader.line_num}: {error}") from None
        row_number += 1
        if max_rows is not None and row_number > max_rows + 1:
            raise InputError(f"{what}: more than {max_rows:,} rows")
        for field in row:
            if len(field) > max_field_chars:
                raise InputError(f"{what}: a field on line {reader.line_num} has {len(field):,} characters; "
                                 f"keep each field under {max_field_chars:,}")
        yield row
