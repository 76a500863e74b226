"""`nadc lint FILE...`: style problems and suspicious-but-valid patterns.

Reports the NAD4xx rules and the front end's warnings (NAD111, NAD115,
NAD116) on stdout; front-end errors are always shown. Selection comes from
`[tool.nadc.lint]` in the nearest pyproject.toml, replaced by `--select` /
`--ignore`; `# nadc: ignore[CODE]` on a line silences it there.

JSON output is one object, `{"diagnostics": [...], "summary": {...}}`: the
findings are warnings, yet any of them fails the check, so the list alone
would not say why the status is 1.

Exit status: 0 no finding, 1 findings, 2 usage or configuration error.
"""
from __future__ import annotations

import json
from collections import Counter

import click

from nader.compiler.commands.common import FORMAT, load
from nader.compiler.lint.config import LintConfigError, selection_for
from nader.compiler.lint.engine import lint_parsed
from nader.compiler.reporting import render_diagnostics, render_json
from nader.dsl.diagnostics import sort_key
from nader.inputs.cli import options
from nader.inputs.settings import Flag, Setting, Text


@click.command("lint")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@options(Setting("--select", Text(), multiple=True, metavar="CODES",
                 help="Report only these codes, prefixes or names (comma-separated; replaces the configured "
                      "`select`)."),
         Setting("--ignore", Text(), multiple=True, metavar="CODES",
                 help="Do not report these codes, prefixes or names (replaces the configured `ignore`)."),
         Setting("--isolated", Flag(), "Ignore pyproject.toml configuration."),
         FORMAT)
def lint_cmd(files, select, ignore, isolated, fmt):
    """Lint block FILEs (`-` reads stdin)."""
    try:
        selections = [selection_for(f, list(select) if select else None, list(ignore) if ignore else None, isolated)
                      for f in files]
    except LintConfigError as error:
        raise click.UsageError(str(error)) from None
    results = load(files)
    linted = [lint_parsed(r, s) for r, s in zip(results, selections)]
    diagnostics = sorted((d for f in linted for d in f.diagnostics), key=sort_key)
    suppressed = sum(f.suppressed for f in linted)
    if fmt == "json":
        summary = {"files": len(files), "findings": len(diagnostics), "suppressed": suppressed,
                   "by_code": dict(sorted(Counter(d.code.code for d in diagnostics).items()))}
        click.echo(json.dumps({"diagnostics": json.loads(render_json(diagnostics)), "summary": summary}, indent=2))
    elif diagnostics:
        sources = {r.program.path: r.source for r in results}
        click.echo(render_diagnostics(diagnostics, fmt, sources), nl=False)
    if fmt == "full" and diagnostics:
        noun = "finding" if len(diagnostics) == 1 else "findings"
        click.echo(f"nadc lint: {len(diagnostics)} {noun} in {len(files)} file{'s' if len(files) != 1 else ''}"
                   + (f" ({suppressed} suppressed)" if suppressed else ""), err=True)
    raise SystemExit(1 if diagnostics else 0)
