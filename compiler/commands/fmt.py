"""`nadc fmt FILE... [--check | --write] [--renumber]`: the canonical form of block files.

Without options the canonical text of each FILE is printed on standard output
(several files one after the other); `-` reads standard input. `--check`
prints which files would change and exits 1 if any would; `--write` rewrites
the files that change, in place, and says how many it reformatted. Files with
syntax errors are reported with the usual diagnostic renderers and left
untouched (exit 1). The canonical form itself is described in
`nader.dsl.format` and docs/language.md. This command never imports torch.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from nader.compiler.commands.common import FORMAT
from nader.compiler.reporting import render_diagnostics
from nader.dsl.diagnostics import Diagnostic
from nader.dsl.format import FormatResult, format_source
from nader.dsl.limits import InputLimits, LimitsError, limits_for, read_bounded, text_problem, text_size
from nader.dsl.parser import UNREADABLE_FILE
from nader.dsl.span import Span
from nader.inputs.cli import options
from nader.inputs.settings import Flag, Setting

_BOM = "\ufeff"


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def _read(path: str, limits: InputLimits) -> tuple[str | None, Diagnostic | None]:
    """The exact text of a file (no newline translation), or a NAD100 diagnostic (NAD122 past the size limit,
    of which no more is read)."""
    name = "<stdin>" if path == "-" else path
    try:
        if path != "-":
            with open(path, "rb") as file:
                data = read_bounded(file, limits.text_bytes)
        else:
            buffer = getattr(sys.stdin, "buffer", None)  # bytes, so CRLF line ends are seen as they are
            data = buffer.read(limits.text_bytes + 1) if buffer is not None else sys.stdin.read(limits.text_bytes + 1)
        size = data if type(data) is int else len(data) if type(data) is bytes else text_size(data)
        if size > limits.text_bytes:
            problem = text_problem(size, limits)
            return None, Diagnostic(problem.code, problem.message, Span(1, 1, 1, 1), problem.help, name)
        return (data.decode("utf-8") if type(data) is bytes else data), None
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        return None, Diagnostic(UNREADABLE_FILE, f"cannot read `{name}`: {reason}", Span(1, 1, 1, 1),
                                "check the path and that the file is UTF-8 text", name)


def _format_one(path: str, source: str, renumber: bool, limits: InputLimits) -> FormatResult:
    name = "<stdin>" if path == "-" else path
    body = source[len(_BOM):] if source.startswith(_BOM) else source  # a byte-order mark is not content
    result = format_source(body, name, renumber_ids=renumber, limits=limits)
    result.source = source  # `changed` compares with the file as it is, mark included
    return result


@click.command("fmt")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@options(Setting("--check", Flag(), "Change nothing; list the files that would change and exit 1 if any."),
         Setting("--write", Flag(), "Rewrite the files that change, in place."),
         Setting("--renumber", Flag(), "Also renumber nodes: inputs first, then output, then the rest in topological "
                                       "order."),
         FORMAT)
def fmt_cmd(files, check, write, renumber, fmt):
    """Print FILEs in canonical form (`-` reads standard input).

    \b
    nadc fmt block.txt              print the canonical text
    nadc fmt --check blocks/*.txt   list files that would change; exit 1 if any
    nadc fmt --write blocks/*.txt   rewrite them in place
    """
    if check and write:
        raise click.UsageError("--check and --write exclude each other")
    if write and "-" in files:
        raise click.UsageError("--write cannot rewrite standard input; leave out --write to print the result")

    diagnostics: list[Diagnostic] = []
    sources: dict[str, str] = {}
    failed = changed = unchanged = 0
    for path in files:
        try:
            limits = limits_for(path)
        except LimitsError as error:
            raise click.UsageError(str(error)) from None
        source, unreadable = _read(path, limits)
        if unreadable is not None:
            diagnostics.append(unreadable)
            failed += 1
            continue
        result = _format_one(path, source, renumber, limits)
        name = result.parsed.program.path
        if not result.ok:
            failed += 1
            sources[name] = result.parsed.source
            diagnostics.extend(result.diagnostics)
            if result.error:
                click.echo(f"error: {name}: {result.error}", err=True)
            continue
        for note in result.notes:
            click.echo(f"warning: {name}: {note}", err=True)
        if result.changed:
            changed += 1
        else:
            unchanged += 1
        if check:
            if result.changed:
                click.echo(f"Would reformat: {name}")
        elif write:
            if result.changed:
                try:
                    Path(path).write_bytes(result.text.encode("utf-8"))
                except OSError as error:
                    click.echo(f"error: {name}: cannot write: {error.strerror or error}", err=True)
                    changed -= 1
                    failed += 1
        else:
            click.echo(result.text, nl=False)

    if diagnostics:
        click.echo(render_diagnostics(diagnostics, fmt, sources), err=True, nl=False)
    if check:
        parts = []
        if changed:
            parts.append(f"{_files(changed)} would be reformatted")
        if unchanged or not changed:
            parts.append(f"{_files(unchanged)} already formatted")
        click.echo(", ".join(parts))
    elif write:
        click.echo(f"{_files(changed)} reformatted, {_files(unchanged)} left unchanged")
    if failed and (check or write or len(files) > 1):
        click.echo(f"{_files(failed)} could not be formatted", err=True)
    raise SystemExit(1 if failed or (check and changed) else 0)
