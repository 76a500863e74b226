"""`nadc FILE... --emit ...`: the default command."""
from __future__ import annotations

import json

import click

from nader.compiler.commands.common import exit_status, format_option, load, report
from nader.dsl.ir import Program, bound_param_text


def program_json(program: Program) -> dict:
    blocks = []
    for b in program.blocks:
        blocks.append({
            "name": b.name,
            "role": b.inferred_role().value,
            "line": b.span.line,
            "nodes": [{"id": n.id, "op": n.op_name, "line": n.span.line,
                       "args": [{"name": a.name, "value": str(a.value)} for a in n.args],
                       "params": {k: str(v) for k, v in n.params.items()}} for n in b.nodes],
            "edges": [{"sources": list(e.sources), "target": e.target, "line": e.span.line} for e in b.edges],
        })
    return {"file": program.path, "blocks": blocks}


EMITTERS = ("ir", "json")


@click.command("compile")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--emit", type=click.Choice(EMITTERS), default="ir", show_default=True, help="What to print.")
@format_option
def compile_cmd(files, emit, fmt):
    """Parse FILEs and print their IR (`ir`: readable dump; `json`: machine-readable)."""
    results = load(files)
    diagnostics = [d for r in results for d in r.diagnostics]
    report(diagnostics, "concise" if fmt == "json" and emit == "json" else fmt, results)
    if emit == "json":
        click.echo(json.dumps([program_json(r.program) for r in results], indent=2))
    else:
        click.echo("\n\n".join(str(r.program) for r in results if r.program.blocks))
    raise SystemExit(exit_status(diagnostics))
