"""`nadc grammar`: the block language's grammar for constrained decoding (and GENIUS's cell reply's).

Printed, not loaded by nadc: it goes to an LLM server (llama.cpp's `grammar` field takes GBNF,
vLLM's structured outputs a grammar too) so that a sampled reply parses. Generated from the
operation registry (nader.compiler.grammar_export), so it names the operations this nadc knows.
"""
from __future__ import annotations

import click

from nader.compiler.commands.common import load_one, report
from nader.compiler.grammar_export import FORMATS, REPLIES, render_grammar
from nader.dsl.edits import EDITS_PER_REPLY, SMALL_EDITS_PER_REPLY
from nader.inputs.cli import options
from nader.inputs.settings import Choice, Integer, Path, Setting, output_format


@click.command("grammar")
@options(output_format(*FORMATS, help="`gbnf`: llama.cpp's grammar format; `lark`: a Lark grammar (start rule "
                                        "`start`); `ebnf`: W3C-style notation for reading."),
         Setting("--reply", Choice((*REPLIES, "cell"), case_sensitive=True), flag_value="block",
                 help="The grammar of an LLM's reply, as the Modifier sends it. `block` (also `--reply` alone): "
                      "one block of header, node and edge lines, no comment or blank line; `edits`: a header, then "
                      "a bounded number of edits of the parent block (`add`, `remove`, `replace`, `insert`, "
                      "`connect`, `disconnect`), the profile's `reply = \"edits\"`; `cell`: GENIUS's NAS-Bench-201 "
                      "cell, a reasoning line of a few words and `op_list = [...]` with the space's operation ids, "
                      "either first."),
         Setting("--parent", Path("file"), metavar="FILE",
                 help="With `--reply edits`: edits of FILE's first block only (its node ids, computing "
                      "operations, and new nodes taking the next free ids in order), as the Modifier sends it."),
         Setting("--most", Integer(1, EDITS_PER_REPLY), default=EDITS_PER_REPLY, metavar="N",
                 help=f"With `--reply edits`: at most N edit lines (the Modifier sends {SMALL_EDITS_PER_REPLY} where "
                      "the model's profile says `small = true`)."))
def grammar_cmd(fmt, reply, parent, most):
    """Print the grammar of block files: operations and their parameters from the registry."""
    block = None
    if most != EDITS_PER_REPLY and reply != "edits":
        raise click.UsageError("--most bounds the edit reply's grammar: add `--reply edits`")
    if parent is not None:
        if reply != "edits":
            raise click.UsageError("--parent specialises the edit reply's grammar: add `--reply edits`")
        result = load_one(parent)
        if not result.ok or not result.program.blocks:
            report(result.diagnostics, "full", [result])
            raise click.UsageError(f"`{parent}` holds no block that parses")
        block = result.program.blocks[0]
    if reply == "cell":  # the cell space declares its reply (its operations); a command may import it
        from nader.search.spaces.cell_reply import reply_grammar

        click.echo(reply_grammar(fmt), nl=False)
        return
    click.echo(render_grammar(fmt, reply, block, most), nl=False)
