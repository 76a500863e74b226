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

import click

from nader.compiler.commands.common import FORMAT
from nader.compiler.reporting import render_diagnostics
from nader.dsl.diagnostics import Diagnostic
from nader.dsl.format import FormatResult, format_source
from nader.dsl.limits import InputLimits, LimitsError, limits_for
from nader.dsl.block_files import read_block_file
from nader.inputs import SourceText
from nader.inputs.cli import options
from nader.inputs.settings import Flag, Setting
from nader.inputs.writes import WriteRefused, write_file


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def _format_one(path: str, source: SourceText, renumber: bool, limits: InputLimits) -> FormatResult:
    """The canonical text in the file's own form: its line ends and byte-order mark are kept
    (`SourceText.render`): a change of text changes the file, and so do line ends of mixed kinds
    (made the first line end's kind)."""
    name = "<stdin>" if path == "-" else path
    result = format_source(source.text, name, renumber_ids=renumber, limits=limits)
    if result.text is not None:
        result.text = source.render(result.text)
    result.source = source.render(source.text)
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
    failed = changed = unchanged = unwritten = 0
    for path in files:
        try:
            limits = limits_for(path)
        except LimitsError as error:
            raise click.UsageError(str(error)) from None
        source, unreadable = read_block_file(path, limits)
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
        differs = result.changed or source.mixed
        if check:
            if differs:
                click.echo(f"Would reformat: {name}")
        elif write and differs:
            try:
                write_file(path, result.text, what="block file")
            except WriteRefused as error:  # the file is as it was: not counted as reformatted
                click.echo(f"error: {error}", err=True)
                unwritten += 1
                continue
        elif not write:
            click.echo(result.text, nl=False)
        changed += differs
        unchanged += not differs

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
    if unwritten:
        click.echo(f"{_files(unwritten)} could not be written", err=True)
    raise SystemExit(1 if failed or unwritten or (check and changed) else 0)
