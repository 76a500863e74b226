"""`nadc hash FILE...`: the canonical hash of every block.

The hash ignores node numbering, the order of node and edge lines, comments,
whitespace, the header name and defaults written or omitted; it changes with
any operation, parameter or edge (and with operand order for `concat` and
`multiply`). The hash is that of the block's canonical form: equal hashes mean
equal blocks (short of a SHA-256 collision); `--duplicates` compares canonical
forms exactly as well.
Files with errors are reported on stderr and skipped (exit 1).
"""
from __future__ import annotations

import json

import click

from nader.compiler.commands.common import load, report
from nader.compiler.passes.canonical import canonical_hash, group_equal, source_hash
from nader.inputs.cli import options
from nader.inputs.settings import Flag, Setting, output_format


@click.command("hash")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@options(output_format("text", "json", help="`text`: `<hash>  <file>:<block>` per line; `json`: an array of objects."),
         Setting("--duplicates", Flag(), "Print only groups of equal blocks (exactly checked), one group per "
                                         "paragraph."))
def hash_cmd(files, fmt, duplicates):
    """Print the canonical hash of each block in FILEs (`-` reads stdin)."""
    results = load(files)
    failed = [r for r in results if not r.ok]
    report([d for r in failed for d in r.diagnostics], "full", failed)
    rows = []
    for r in results:
        if not r.ok:
            continue
        for b in r.program.blocks:
            rows.append({"file": r.program.path, "block": b.name, "line": b.span.line,
                         "hash": canonical_hash(b), "source_hash": source_hash(b), "_block": b})
    if duplicates:
        groups = [g for g in group_equal([(i, row["_block"]) for i, row in enumerate(rows)]) if len(g) > 1]
        if fmt == "json":
            click.echo(json.dumps([[_public(rows[i]) for i in g] for g in groups], indent=2))
        else:
            click.echo("\n".join("".join(_line(rows[i]) for i in g) for g in groups), nl=False)
    elif fmt == "json":
        click.echo(json.dumps([_public(row) for row in rows], indent=2))
    else:
        click.echo("".join(_line(row) for row in rows), nl=False)
    raise SystemExit(1 if failed else 0)


def _public(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("_")}


def _line(row: dict) -> str:
    return f"{row['hash']}  {row['file']}:{row['block']}\n"
