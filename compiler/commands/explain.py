"""`nadc explain`: documentation of a diagnostic code, the operation reference, or a mutation operator."""
from __future__ import annotations

import click

from nader.dsl.diagnostics import code_table, find_code
from nader.dsl.ops import reference_text


def _operators():
    from nader.compiler.mutate import OPERATORS  # imported on use: it loads the verifier

    return OPERATORS


@click.command("explain")
@click.argument("code", required=False)
def explain_cmd(code):
    """Explain CODE (NAD104 or unknown-operation) or a mutation operator (insert-se).

    `ops` prints the operations, `mutations` lists the mutation operators; no CODE lists all codes.
    """
    if code is None:
        for entry in code_table().values():
            click.echo(f"{entry.code}  {entry.severity:<7}  {entry.name:<32} {entry.summary}")
        return
    topic = code.strip().lower()
    if topic in ("ops", "operations"):
        click.echo(reference_text())
        return
    if topic in ("mutations", "mutation", "mutate"):
        for op in _operators().values():
            click.echo(f"{op.name:<26} {op.summary}")
        return
    operator = _operators().get(topic)
    if operator is not None:
        from nader.compiler.mutate.example import example

        click.echo(operator.explain(), nl=False)
        shown = example(operator)
        if shown is not None:
            click.echo(f"\n## Example\nOn a ResNet basic block (`nadc explain` runs it now):\n```\n{shown}\n```")
        return
    entry = find_code(code)
    if entry is None:
        raise click.UsageError(f"unknown code `{code}`; `nadc explain` lists the codes, "
                               f"`nadc explain mutations` the mutation operators")
    click.echo(entry.explain(), nl=False)
