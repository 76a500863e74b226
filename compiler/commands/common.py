"""Shared pieces of the subcommands: file loading, diagnostic output, exit codes."""
from __future__ import annotations

from typing import Iterable, Optional

import click

from nader.compiler.reporting import FORMATS, render
from nader.inputs import InputError, positive
from nader.dsl.diagnostics import Diagnostic
from nader.dsl.limits import LimitsError, limits_for
from nader.dsl.parser import ParseResult, parse_file

format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="full", show_default=True,
                             help="How to print diagnostics.")


def load(paths: Iterable[str]) -> list[ParseResult]:
    """Parse each path; `-` reads standard input."""
    return [load_one(path) for path in paths]


def load_one(path: str) -> ParseResult:
    """Parse one path under its input limits (`[tool.nadc.limits]`); `-` reads standard input."""
    try:
        limits = limits_for(path)
    except LimitsError as error:
        raise click.UsageError(str(error)) from None
    return parse_file(path, limits)  # `-` too: every command reads a block file alike (read_block_file)


def report(diagnostics: list[Diagnostic], fmt: str, results: Iterable[ParseResult],
           err: Optional[bool] = None) -> None:
    """Print diagnostics: to stderr, except JSON, which goes to stdout unless `err` says otherwise
    (commands whose stdout is an artifact pass `err=True`)."""
    if not diagnostics and fmt != "json":
        return
    sources = {r.program.path: r.source for r in results}
    click.echo(render(diagnostics, fmt, sources), err=fmt != "json" if err is None else err, nl=False)


def int_list(text: Optional[str], what: str) -> Optional[tuple[int, ...]]:
    """Comma-separated positive integers of an option such as `--widths 16,32,64`."""
    if not text:
        return None
    try:
        values = tuple(int(v) for v in text.replace(" ", "").split(",") if v)
    except ValueError:
        raise click.BadParameter(f"{what} must be comma-separated integers, e.g. 16,32,64") from None
    if not values or any(v < 1 for v in values):
        raise click.BadParameter(f"{what} must list positive integers, e.g. 16,32,64")
    return values


def exit_status(diagnostics: Iterable[Diagnostic]) -> int:
    return 1 if any(d.is_error for d in diagnostics) else 0



class PositiveFinite(click.ParamType):
    """A float flag that is finite and > `least` (click's FloatRange lets nan and inf through), at
    most `most`."""

    name = "float"

    def __init__(self, least: float = 0.0, most: float = 1e15):
        self.least, self.most = least, most

    def convert(self, value, param, ctx):
        try:
            number = positive(value, "value", hi=self.most, from_text=True)
        except InputError as error:
            self.fail(str(error).partition(": ")[2], param, ctx)
        if number < self.least:
            self.fail(f"{number} is below the least allowed, {self.least}", param, ctx)
        return float(number)
