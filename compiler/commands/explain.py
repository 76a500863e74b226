"""`nadc explain`: documentation of a diagnostic code, the operation reference, or a mutation operator."""
from __future__ import annotations

import click

from nader.compiler.codes import code_table, find_code
from nader.dsl.ops import reference_text


def _fix_kinds():
    from nader.compiler.repair import all_kinds  # imported on use: it loads the verifier

    return all_kinds()


def _operators():
    from nader.compiler.mutate import OPERATORS  # imported on use: it loads the verifier

    return OPERATORS


@click.command("explain")
@click.argument("code", required=False)
def explain_cmd(code):
    """Explain CODE (NAD104 or unknown-operation), a mutation operator (insert-se) or a fix kind
    (merge-inputs-add).

    `ops` prints the operations, `mutations` lists the mutation operators, `fixes` the fix kinds of
    `nadc fix`; no CODE lists all codes.
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
    if topic in ("fixes", "fix"):
        for kind in _fix_kinds().values():
            click.echo(f"{kind.name:<30} {kind.safety:<7} {kind.answers:<20} {kind.summary}")
        return
    kind = _fix_kinds().get(topic)
    if kind is not None:
        click.echo(kind.explain(), nl=False)
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
                               f"`nadc explain mutations` the mutation operators, `nadc explain fixes` the fix kinds")
    click.echo(entry.explain(), nl=False)
    kinds = [k for k in _fix_kinds().values() if entry.code in k.codes]
    if kinds:
        click.echo("\n## Fixes (`nadc fix`)\n" + "".join(f"- `{k.name}` ({k.safety}): {k.summary}\n" for k in kinds),
                   nl=False)
