"""`nadc grammar`: the block language's grammar for constrained decoding (and GENIUS's cell reply's).

Printed, not loaded by nadc: it goes to an LLM server (llama.cpp's `grammar` field takes GBNF,
vLLM's structured outputs a grammar too) so that a sampled reply parses. Generated from the
operation registry (nader.compiler.grammar_export), so it names the operations this nadc knows.
"""
from __future__ import annotations

import click

from nader.compiler.commands.common import load_one, report
from nader.compiler.grammar_export import FORMATS, REPLIES, render_grammar
from nader.inputs.cli import options
from nader.inputs.settings import Choice, Path, Setting, output_format


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
                 help="With `--reply edits`: edits of FILE's first block only (its node ids and the next free ones, "
                      "computing operations), as the Modifier sends it."))
def grammar_cmd(fmt, reply, parent):
    """Print the grammar of block files: operations and their parameters from the registry."""
    block = None
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
    click.echo(render_grammar(fmt, reply, block), nl=False)
