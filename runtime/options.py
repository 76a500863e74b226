"""Command-line options that `nader-search eval` and `nader-search run` share, declared once so
that one setting has one spelling in both: `--executor local|pool|ray`, `--trial-timeout` and
`--progress auto|rich|plain|off`.

eval's old spellings (`--executor inprocess`, `--timeout`) still work for one release, hidden
from `--help`, with a warning. The option objects live here, on the runtime floor, because eval
is the runtime's command and the search's CLI sits above it.
"""
from __future__ import annotations

import re
from typing import Optional

import click

from .progress import PROGRESS_MODES

EXECUTORS = ("local", "pool", "ray")
_OLD_EXECUTORS = {"inprocess": "local", "in-process": "local"}


def _warn_renamed(old: str, new: str) -> None:
    click.echo(f"warning: {old} is now {new}; the old name goes in the next release", err=True)


class ExecutorChoice(click.Choice):
    """local, pool or ray (any case); the old `inprocess` is taken as local."""

    def __init__(self):
        super().__init__(EXECUTORS, case_sensitive=False)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.lower() in _OLD_EXECUTORS:
            _warn_renamed(f"--executor {value}", "--executor local")
            return _OLD_EXECUTORS[value.lower()]
        return super().convert(value, param, ctx).lower()


def duration(ctx, param, value) -> Optional[float]:
    """Seconds, or a number with s/m/h."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", str(value))
    if not m or float(m.group(1)) <= 0:
        raise click.BadParameter("expected a positive duration such as 600, 90s, 10m or 2h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def executor_option(default: Optional[str], help: str):
    return click.option("--executor", type=ExecutorChoice(), default=default, show_default=default is not None,
                        help=help)


def progress_option(help: str):
    """`--progress`: rich (drawn in place), plain (one line per finished trial, for logs), off;
    auto: rich on a terminal, plain elsewhere (`progress.resolve_progress`)."""
    return click.option("--progress", "progress_mode", type=click.Choice(PROGRESS_MODES, case_sensitive=False),
                        default="auto", show_default=True, help=help)


def trial_timeout_option(help: str = "Kill a trial after this long (600, 90s, 10m, 2h; pool executor)."):
    return click.option("--trial-timeout", callback=duration, default=None, help=help)


# eval's old name of --trial-timeout: pass its value through `trial_timeout` with the new one's.
old_timeout_option = click.option("--timeout", "old_timeout", callback=duration, default=None, hidden=True)


def trial_timeout(new: Optional[float], old: Optional[float]) -> Optional[float]:
    """The trial timeout given by --trial-timeout or, with a warning, by the old --timeout."""
    if old is None:
        return new
    if new is not None:
        raise click.UsageError("--timeout is the old name of --trial-timeout: give --trial-timeout alone")
    _warn_renamed("--timeout", "--trial-timeout")
    return old
