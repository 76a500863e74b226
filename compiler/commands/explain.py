"""`nadc explain`: documentation of a diagnostic code, or the operation reference."""
from __future__ import annotations

import click

from nader.dsl.diagnostics import code_table, find_code
from nader.dsl.ops import reference_text


@click.command("explain")
@click.argument("code", required=False)
def explain_cmd(code):
    """Explain CODE (NAD104 or unknown-operation); `ops` prints the operations; no CODE lists all codes."""
    if code is None:
        for entry in code_table().values():
            click.echo(f"{entry.code}  {entry.severity:<7}  {entry.name:<32} {entry.summary}")
        return
    if code.lower() in ("ops", "operations"):
        click.echo(reference_text())
        return
    entry = find_code(code)
    if entry is None:
        raise click.UsageError(f"unknown code `{code}`; `nadc explain` lists them")
    click.echo(entry.explain(), nl=False)
