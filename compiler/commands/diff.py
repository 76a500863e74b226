"""`nadc diff A B [--block NAME]`: what a modification did to a block.

Nodes are matched by the best structural alignment found, not by id, so a
renumbered or reordered copy shows no differences. The output lists nodes
changed (operation or parameters, `kernel_size: 3 -> 5`), removed and added,
then edges removed and added. Removed nodes and edges are named by A's ids,
added ones by B's ids; a changed node shows both ids where they differ.

Blocks are paired by name; where names do not pair (an agent renamed its
block), the remaining blocks pair up in file order. `--block NAME` compares
only that block (`--block-b` names it in B when it is called differently).

Exit status: 0 equal, 1 different, 2 usage error or a file that does not parse.
"""
from __future__ import annotations

import json
from typing import Optional

import click

from nader.compiler.commands.common import load, report
from nader.compiler.passes.diff import block_diff, diff_json, pair_blocks, render_text
from nader.dsl.ir import Block
from nader.inputs.cli import options
from nader.inputs.settings import Setting, Text, output_format


def _select(blocks: list[Block], name: Optional[str], path: str) -> list[Block]:
    if name is None:
        return blocks
    chosen = [b for b in blocks if b.name == name]
    if not chosen:
        names = ", ".join(b.name for b in blocks) or "none"
        raise click.UsageError(f"`{path}` has no block `{name}` (its blocks: {names})")
    return chosen[:1]


@click.command("diff")
@click.argument("file_a", type=click.Path(allow_dash=True))
@click.argument("file_b", type=click.Path(allow_dash=True))
@options(Setting("--block", Text(), "Compare only this block.", metavar="NAME"),
         Setting("--block-b", Text(), "The block's name in FILE_B, if it differs.", metavar="NAME"),
         output_format("text", "json"))
def diff_cmd(file_a, file_b, block, block_b, fmt):
    """Show nodes and edges added, removed or changed between the blocks of FILE_A and FILE_B."""
    if file_a == "-" and file_b == "-":
        raise click.UsageError("only one of the two files can be `-`")
    results = load([file_a, file_b])
    failed = [r for r in results if not r.ok]
    if failed:
        report([d for r in failed for d in r.diagnostics], "full", failed)
        click.echo("nadc diff: cannot compare files with errors", err=True)
        raise SystemExit(2)
    ra, rb = results
    blocks_a = _select(list(ra.program.blocks), block, ra.program.path)
    blocks_b = _select(list(rb.program.blocks), block_b or block, rb.program.path)
    pairs, only_a, only_b = pair_blocks(blocks_a, blocks_b)
    diffs = [block_diff(a, b) for a, b in pairs]
    equal = all(d.equal for d in diffs) and not only_a and not only_b
    if fmt == "json":
        click.echo(json.dumps({
            "equal": equal,
            "blocks": [diff_json(d, ra.program.path, rb.program.path) for d in diffs],
            "only_in_a": [b.name for b in only_a],
            "only_in_b": [b.name for b in only_b],
        }, indent=2))
    else:
        texts = [render_text(d, ra.program.path, rb.program.path) for d in diffs if not d.equal]
        texts += [f"only in {ra.program.path}: block {b.name}\n" for b in only_a]
        texts += [f"only in {rb.program.path}: block {b.name}\n" for b in only_b]
        click.echo("\n".join(texts), nl=False)
    raise SystemExit(0 if equal else 1)
