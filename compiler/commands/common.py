"""Shared pieces of the subcommands: file loading, diagnostic output, exit codes, and the settings
several commands take (`--role`, `--stem-stride`, `--domain`, `--format` of diagnostics, the
network's `--widths`, `--depths`, `--input-size`), declared once (`nader.inputs.settings.Setting`).
A command takes one as it is or places it with its own help (`ROLE.but(help=...)`), so the
spelling and the reader stay the same in every command; `nader.inputs.cli.options` makes the
click options. Settings only one command takes are declared beside it. (Here, not in a module of
their own: `nadc verify` imports this one anyway, and each module costs its start-up.)"""
from __future__ import annotations

from typing import Iterable, Optional

import click

from nader.compiler.reporting import FORMATS, render_diagnostics
from nader.dsl.diagnostics import Diagnostic
from nader.dsl.ir import Role
from nader.dsl.limits import LimitsError, limits_for
from nader.dsl.block_files import parse_file
from nader.dsl.parser import ParseResult
from nader.inputs.settings import Choice, Custom, Integer, IntList, Setting


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
    click.echo(render_diagnostics(diagnostics, fmt, sources), err=fmt != "json" if err is None else err, nl=False)


def exit_status(diagnostics: Iterable[Diagnostic]) -> int:
    return 1 if any(d.is_error for d in diagnostics) else 0


def _domain(value):
    """square | any | N: the input sizes a verdict holds for (`nader.compiler.passes.parse_domain`)."""
    from nader.compiler.passes import parse_domain  # the passes load when a command runs, not for --help

    return parse_domain(value) if isinstance(value, str) else value


ROLE = Setting("--role", Choice([r.value for r in Role], case_sensitive=True),
               "Verify every block in this role instead of the one its header implies.")
STEM_STRIDE = Setting("--stem-stride", Integer(1, 64),
                      help="Stride of stems: 1 for NAS-Bench-201, 4 for ImageNet-style networks.",
                      shown_default="the stride each stem has, as networks take it (the first of 1, 2, 4, 8, 16, 32 "
                                    "it verifies with)")
DOMAIN = Setting("--domain", Custom(_domain, "square|any|N", "square, any or a resolution N"), default="square",
                 help="Input sizes the verdict holds for: square maps (H = W) at any size, as networks feed them; "
                      "`any` H and W with one set of weights; or one resolution N (N x N).")
FORMAT = Setting("--format", Choice(FORMATS, case_sensitive=True), "How to print diagnostics.", name="fmt",
                 default="full")
WIDTHS = Setting("--widths", IntList(1, example="16,32,64"), "Stage widths instead of fitting them, e.g. 16,32,64.")
DEPTHS = Setting("--depths", IntList(1, example="5,5,5"), "Blocks per stage, e.g. 5,5,5.")
INPUT_SIZE = Setting("--input-size", Integer(1), "Input resolution of the network.")
