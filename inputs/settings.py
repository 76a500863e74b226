"""Settings, declared once: a `Setting` is a flag, a TOML key and a Python keyword at the same
time (where it has them), with what its value is, its default and help. Before, one setting of the
search was written three times (a click option, a search.toml key, a `create_study` keyword), each
with its own checks, so the three doors let different values in; now each door is generated from
the same `Setting`, and each reads the value with the setting's one reader, its `Kind`. So
`--max-params nan`, `max-params = nan` in a search.toml and `create_study(max_params=float("nan"))`
are refused by the same code with the same reason.

A reader (`Kind.read`) takes the raw value and the name to blame (`what`: the flag, the TOML key
or the keyword) and returns the value typed and bounded, or raises `InputError("{what}: {reason}")`.
Text is parsed; TOML's and Python's own types are taken as they are when they are the right type (a
bool is never a number). `int_list` is the one parser of comma-separated integers (seeds, depths,
widths).

Plain data, no click (the library never imports the command line): `nader.inputs.cli` makes the
click options of settings; a TOML reader or an API looks settings up by `toml` or `keyword` and
calls `read`. A table that places a shared setting differently (another help, default or
destination) derives it with `but`, so its reader and spelling stay the one declared. One module,
not two: `nadc verify` imports it, and each module costs its start-up.
"""
from __future__ import annotations

import math
import os
import pathlib
import re
from typing import Callable, Optional, Sequence, Tuple, Union

from .errors import InputError
from .numbers import MAX_NUMBER_TEXT, Number, finite_number, positive

#: the most an integer setting may be unless it says otherwise (SQLite stores 64-bit integers,
#: JSON readers keep 53 bits exactly)
MOST_INT = 2**53
#: a path, a name or a URL: far more than any real one
MAX_TEXT = 4096
_SI = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}
_MIB_SHIFT = {"": 20, "m": 20, "g": 30, "t": 40}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _shown(value) -> str:
    """A value as a message quotes it: text as written, numbers as Python prints them (so the
    string "nan" and the float nan read alike)."""
    text = value if isinstance(value, str) else repr(value)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _number_text(value) -> str:
    """A number as text, to go through the same parser as a flag's text."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError
    return value if isinstance(value, str) else repr(value)


def int_list(value, what: str, *, lo: Optional[int] = None, hi: Optional[int] = None,
             example: str = "1,2,3") -> list:
    """Comma-separated integers (``"777, 888"``) or a list of them (TOML, Python), at least one,
    each in [lo, hi]: the one parser of seeds, depths and widths."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise InputError(f"{what}: {len(value):,} characters is too long (at most {MAX_TEXT:,})")
        items = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = None
    if not items or not all((isinstance(x, int) and not isinstance(x, bool))
                            or (isinstance(x, str) and x.lstrip("+-").isdigit()) for x in items):
        raise InputError(f"{what}: expected comma-separated integers such as {example}, got {_shown(value)}")
    return [finite_number(x, what, lo=lo, hi=hi, integer=True, from_text=True) for x in items]


def _bounds(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"{lo}<=x<={hi}"
    return f"x>={lo}" if lo is not None else f"x<={hi}" if hi is not None else ""


class Kind:
    """What a setting's value is: read and check it (`read`), and how a command line shows it
    (`metavar`, `choices`; `path` says whether shell completion offers files or folders)."""

    metavar = "TEXT"
    choices: tuple = ()
    path = ""
    describe = "text"  # for the generated docs: what the value is
    bounds = ""  # the range, as click shows one ("x>=1", "1<=x<=64"), where the kind has one

    def read(self, value, what: str):
        raise NotImplementedError

    def fail(self, what: str, reason: str):
        raise InputError(f"{what}: {reason}")


class Text(Kind):
    """A string of bounded length."""

    def __init__(self, max_chars: int = MAX_TEXT, metavar: str = "TEXT"):
        self.max_chars, self.metavar = max_chars, metavar

    def read(self, value, what):
        if not isinstance(value, str):
            self.fail(what, f"expected text, got {_shown(value)}")
        if len(value) > self.max_chars:
            self.fail(what, f"{len(value):,} characters is too long (at most {self.max_chars:,})")
        return value


class Path(Kind):
    """A path (text or `os.PathLike`), bounded; when it exists, a file where a file is wanted and
    a folder where a folder is (`kind`: "file", "dir" or "path", either)."""

    def __init__(self, kind: str = "path", as_path: bool = False):
        self.path, self.as_path = kind, as_path
        self.metavar = {"file": "FILE", "dir": "DIR"}.get(kind, "PATH")
        self.describe = {"file": "a file", "dir": "a folder"}.get(kind, "a path")

    def read(self, value, what):
        text = os.fspath(value) if isinstance(value, os.PathLike) else value
        if not isinstance(text, str) or not text:
            self.fail(what, f"expected a path, got {_shown(value)}")
        if len(text) > MAX_TEXT:
            self.fail(what, f"a path of {len(text):,} characters is too long (at most {MAX_TEXT:,})")
        if self.path != "path" and text != "-":
            try:
                is_dir = os.path.isdir(text)
                exists = is_dir or os.path.exists(text)
            except (OSError, ValueError):  # a NUL byte, a name too long: the reader names it later
                exists = is_dir = False
            if exists and is_dir != (self.path == "dir"):
                self.fail(what, f"{text} is {'a folder' if is_dir else 'a file'}; give {self.describe}")
        if self.as_path:
            return pathlib.Path(text)
        return text


class Integer(Kind):
    """A whole number in [lo, hi] (text such as "12", or an int; 3.0 passes as 3)."""

    metavar = "INTEGER"

    def __init__(self, lo: Optional[int] = None, hi: Optional[int] = None):
        self.lo = -MOST_INT if lo is None else lo
        self.hi = MOST_INT if hi is None else hi
        self.bounds = _bounds(lo, hi)
        self.describe = "an integer" + (f", {self.bounds}" if self.bounds else "")

    def read(self, value, what):
        return finite_number(value, what, lo=self.lo, hi=self.hi, integer=True, from_text=True)


class Real(Kind):
    """A finite number, > 0 when `positive`, in [lo, hi]."""

    metavar = "FLOAT"

    def __init__(self, lo: Optional[Number] = None, hi: Optional[Number] = None, positive: bool = False):
        self.lo, self.hi, self.positive = lo, hi, positive
        self.bounds = _bounds(lo, hi) or ("x>0" if positive else "")
        self.describe = "a number" + (f", {self.bounds}" if self.bounds else "")

    def read(self, value, what):
        if self.positive:
            number = positive(value, what, hi=self.hi, from_text=True)
            if self.lo is not None and number < self.lo:
                self.fail(what, f"{number} is below the least allowed, {self.lo}")
            return float(number)
        return float(finite_number(value, what, lo=self.lo, hi=self.hi, from_text=True))


class Count(Kind):
    """A positive whole count, with an optional K/M/G suffix: 1500000, 1.5M, 0.2G, 2e6."""

    metavar = "COUNT"
    describe = "a count (1.5M, 0.2G)"
    _RE = r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*"  # compiled on first use: start-up

    def __init__(self, example: str = "1500000, 1.5M or 0.2G"):
        self.example = example

    def read(self, value, what):
        try:
            text = _number_text(value)
        except ValueError:
            text = None
        m = re.fullmatch(self._RE, text) if text is not None and len(text) <= MAX_NUMBER_TEXT else None
        number = float(m.group(1)) * _SI[m.group(2).lower()] if m else math.nan
        if not (1 <= number <= MOST_INT):  # nan and inf fail too
            self.fail(what, f"expected a positive count such as {self.example}, got {_shown(value)}")
        return int(round(number))


class Duration(Kind):
    """Seconds, or a number with s/m/h (600, 90s, 10m, 2h); with `sim`, also simulated seconds of
    a tabular benchmark, ``sim:20000``, returned as the text ``"sim:SECONDS"``."""

    metavar = "DURATION"
    describe = "a duration (600, 90s, 10m, 2h)"
    _RE = r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([smh]?)\s*"

    def __init__(self, sim: bool = False):
        self.sim = sim

    def read(self, value, what):
        try:
            text = _number_text(value).strip().lower()
        except ValueError:
            text = ""
        sim = self.sim and text.startswith("sim:")
        body = text[4:] if sim else text
        m = re.fullmatch(self._RE, body) if len(body) <= MAX_NUMBER_TEXT else None
        seconds = float(m.group(1)) * _SECONDS[m.group(2)] if m else math.nan
        if not 0 < seconds < math.inf:
            also = ", or simulated seconds such as sim:20000" if self.sim else ""
            self.fail(what, f"expected a positive duration such as 600, 90s, 10m or 2h{also}, got {_shown(value)}")
        return f"sim:{seconds:g}" if sim else seconds


class Size(Kind):
    """A memory size: MiB as a number (6144), or with a unit (512M, 6G, 6GiB); returns bytes."""

    metavar = "SIZE"
    describe = "a size (6G, 512M; a number is MiB)"
    _RE = r"([0-9]*\.?[0-9]+)\s*([mMgGtT]?)(?:i?[bB])?"

    def read(self, value, what):
        try:
            text = _number_text(value).strip()
        except ValueError:
            text = ""
        m = re.fullmatch(self._RE, text) if len(text) <= MAX_NUMBER_TEXT else None
        size = float(m.group(1)) * 2 ** _MIB_SHIFT[m.group(2).lower()] if m else 0.0
        if not 0 < size < math.inf:
            self.fail(what, f"expected a positive size such as 6144 (MiB), 512M or 6G, got {_shown(value)}")
        if size > 2 ** 60:
            self.fail(what, f"{_shown(value)} is larger than any machine")
        return int(size)


class Choice(Kind):
    """One of `values` (any case unless `case_sensitive`; returned as declared). `aliases` are old
    spellings taken as the value they map to."""

    describe = "one of"

    def __init__(self, values: Sequence[str], case_sensitive: bool = False, aliases: Optional[dict] = None):
        self.choices, self.case_sensitive = tuple(values), case_sensitive
        self.aliases = dict(aliases or {})
        self.metavar = f"[{'|'.join(self.choices)}]"

    def read(self, value, what):
        if isinstance(value, str):
            key = value if self.case_sensitive else value.strip().lower()
            for choice in self.choices:
                if key == (choice if self.case_sensitive else choice.lower()):
                    return choice
            if key in self.aliases:
                return self.aliases[key]
        self.fail(what, f"choose one of {', '.join(self.choices)}, not {_shown(value)}")


class Flag(Kind):
    """On or off: a bool (TOML, Python) or its text (true/false, yes/no, on/off, 1/0)."""

    metavar = "BOOLEAN"
    describe = "a switch"

    def read(self, value, what):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        self.fail(what, f"expected true or false, got {_shown(value)}")


class IntList(Kind):
    """Comma-separated integers or a list of them (`int_list`), each in [lo, hi]."""

    metavar = "N,N,..."
    describe = "integers (1,2,3)"

    def __init__(self, lo: Optional[int] = None, hi: Optional[int] = None, example: str = "777,888,999"):
        self.lo = -MOST_INT if lo is None else lo
        self.hi = MOST_INT if hi is None else hi
        self.example = example

    def read(self, value, what):
        return int_list(value, what, lo=self.lo, hi=self.hi, example=self.example)


class Pairs(Kind):
    """KEY=VALUE items (a repeated flag's texts) or a table (TOML, Python dict): a dict whose keys
    are spelt with underscores."""

    metavar = "KEY=VALUE"
    describe = "KEY=VALUE pairs, or a table"

    def read(self, value, what):
        if isinstance(value, dict):
            return {str(k).strip().replace("-", "_"): v for k, v in value.items()}
        if isinstance(value, str):
            value = (value,)
        if not isinstance(value, (list, tuple)):
            self.fail(what, f"expected KEY=VALUE pairs or a table, got {_shown(value)}")
        out = {}
        for item in value:
            key, sep, text = str(item).partition("=")
            if not sep or not key.strip():
                self.fail(what, f"expected KEY=VALUE, got {_shown(item)}")
            out[key.strip().replace("-", "_")] = text.strip()
        return out


class Custom(Kind):
    """A value read by a function of the library (`read(value)`, raising ValueError or
    InputError with the reason); `metavar` says what it looks like."""

    def __init__(self, read: Callable, metavar: str, describe: str = ""):
        self._read, self.metavar, self.describe = read, metavar, describe or metavar

    def read(self, value, what):
        try:
            return self._read(value)
        except InputError as exc:
            reason = str(exc)
            raise InputError(reason if reason.startswith(f"{what}:") else f"{what}: {reason}") from None
        except (TypeError, ValueError) as exc:
            self.fail(what, str(exc))

class Setting:
    """One setting.

    `flag`: the command line's spelling ("--max-params"; a tuple for short forms, ("-o",
    "--output"); "--compile/--no-compile" for an on/off pair; None: not a flag). `kind`: what its
    value is and how it is read. `name`: the keyword the command's function receives (default:
    the long flag with underscores). `field`: where the library keeps it (a `SearchConfig`
    field, an `LLMConfig` field; default `name`). `toml`: its key in a TOML file (True: the long
    flag without dashes). `keyword`: its Python API keyword (True: `field`). `default`: the value
    when it is not given, and `shown_default` the words `--help` shows for a default that is
    computed ("the preset's"). `old`: hidden old spellings of the flag, taken with a warning for one
    release; `old_toml` the same for TOML keys. `flag_value`: the value of a flag given without
    one (`--repair` alone). The rest is click's: `metavar`, `envvar`, `multiple`, `required`,
    `hidden`.
    """

    __slots__ = ("spellings", "kind", "help", "name", "field", "toml", "keyword", "default", "shown_default", "old",
                 "old_toml", "flag_value", "metavar", "envvar", "multiple", "required", "hidden")

    def __init__(self, flag: Union[str, Sequence[str], None], kind: Kind, help: str = "", *, name: Optional[str] = None,
                 field: Optional[str] = None, toml: Union[bool, str] = False, keyword: Union[bool, str] = False,
                 default=None, shown_default: Optional[str] = None, old: Tuple[str, ...] = (),
                 old_toml: Tuple[str, ...] = (), flag_value=None, metavar: Optional[str] = None,
                 envvar: Optional[str] = None, multiple: bool = False, required: bool = False, hidden: bool = False):
        self.spellings = (flag,) if isinstance(flag, str) else tuple(flag or ())
        self.kind, self.help, self.default, self.shown_default = kind, help, default, shown_default
        long = self.long
        self.name = name or (long.lstrip("-").split("/")[0].replace("-", "_") if long else None) or field
        if self.name is None:
            raise ValueError("a setting without a flag needs a name or a field")
        self.field = field or self.name
        self.toml = (long.lstrip("-") if long else self.name.replace("_", "-")) if toml is True else (toml or None)
        self.keyword = self.field if keyword is True else (keyword or None)
        self.old, self.old_toml, self.flag_value = tuple(old), tuple(old_toml), flag_value
        self.metavar, self.envvar, self.multiple = metavar, envvar, multiple
        self.required, self.hidden = required, hidden

    @property
    def long(self) -> Optional[str]:
        """The long spelling ("--max-params"), or the only one ("-k")."""
        for spelling in self.spellings:
            if spelling.startswith("--"):
                return spelling
        return self.spellings[0] if self.spellings else None

    @property
    def is_flag(self) -> bool:
        """An on/off switch that takes no value (`--force`, `--compile/--no-compile`)."""
        return isinstance(self.kind, Flag)

    @property
    def choices(self) -> tuple:
        return self.kind.choices if isinstance(self.kind, Choice) else ()

    def read(self, value, what: Optional[str] = None):
        """The value, read and checked by the setting's kind; InputError("{what}: reason") where it
        is refused (`what`: the door it came in by, default the flag)."""
        return self.kind.read(value, what or self.long or self.name)

    def shown(self) -> Optional[str]:
        """The default as help and docs show it, or None for no default."""
        if self.shown_default is not None:
            return self.shown_default
        if self.default is None or self.is_flag:
            return None
        return ",".join(map(str, self.default)) if isinstance(self.default, (list, tuple)) else str(self.default)

    def but(self, **changes) -> "Setting":
        """The same setting placed differently (another help, default, destination or spellings)."""
        out = object.__new__(Setting)
        for slot in Setting.__slots__:
            object.__setattr__(out, slot, getattr(self, slot))
        for key, value in changes.items():
            if key == "flag":
                out.spellings = (value,) if isinstance(value, str) else tuple(value or ())
            elif key in ("toml", "keyword") and value is True:
                setattr(out, key, (out.long.lstrip("-") if key == "toml" else out.field))
            elif key in ("old", "old_toml"):
                setattr(out, key, tuple(value))
            else:
                setattr(out, key, value)
        return out

    def __repr__(self) -> str:
        return f"Setting({self.long or self.name!r})"


def output_format(*choices: str, help: str = "") -> Setting:
    """`--format` of a command: its choices, the first the default; the command receives `fmt`."""
    return Setting("--format", Choice(choices), help, name="fmt", default=choices[0])


def by_toml(settings: Sequence[Setting]) -> dict:
    """TOML key -> setting, old keys included (underscores read as dashes by the caller)."""
    out = {}
    for s in settings:
        for key in ((s.toml,) if s.toml else ()) + s.old_toml:
            out[key] = s
    return out


def by_keyword(settings: Sequence[Setting]) -> dict:
    """Python keyword -> setting."""
    return {s.keyword: s for s in settings if s.keyword}
