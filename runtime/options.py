"""Command-line options that `nader-search eval` and `nader-search run` share, declared once as
plain data (`OptionSpec`) so that one setting has one spelling in both: `--executor
local|pool|ray`, `--trial-timeout` and `--progress auto|rich|plain|off`.

The click decorators that read these declarations live in a CLI module (`nader.runtime.cli`):
the library does not import click. eval's old spellings (`--executor inprocess`, `--timeout`)
still work for one release, hidden from `--help`, with a warning.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .progress import PROGRESS_MODES

EXECUTORS = ("local", "pool", "ray")
#: Old spellings of --executor and what they now mean.
OLD_EXECUTORS = {"inprocess": "local", "in-process": "local"}


@dataclass(frozen=True)
class OptionSpec:
    """A command-line option as data: its flag, the keyword it arrives as, its type (a Python type,
    or a tuple of choices), default and help. A CLI module turns it into a click option."""

    flag: str
    name: str
    type: object = str
    default: object = None
    help: str = ""
    hidden: bool = False


def renamed_warning(old: str, new: str) -> str:
    return f"warning: {old} is now {new}; the old name goes in the next release"


def parse_duration(value) -> Optional[float]:
    """Seconds, or a number with s/m/h; ValueError otherwise."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", str(value))
    if not m or float(m.group(1)) <= 0:
        raise ValueError("expected a positive duration such as 600, 90s, 10m or 2h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


EXECUTOR = OptionSpec("--executor", "executor", EXECUTORS)
#: `--progress`: rich (drawn in place), plain (one line per finished trial, for logs), off;
#: auto: rich on a terminal, plain elsewhere (`progress.resolve_progress`).
PROGRESS = OptionSpec("--progress", "progress_mode", PROGRESS_MODES, "auto")
TRIAL_TIMEOUT = OptionSpec("--trial-timeout", "trial_timeout", float, None,
                           "Kill a trial after this long (600, 90s, 10m, 2h; pool executor).")
# eval's old name of --trial-timeout: its value goes through `trial_timeout` with the new one's.
OLD_TIMEOUT = OptionSpec("--timeout", "old_timeout", float, None, hidden=True)
