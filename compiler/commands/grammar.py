"""`nadc grammar`: the block language's grammar for constrained decoding.

Printed, not loaded by nadc: it goes to an LLM server (llama.cpp's `grammar` field takes GBNF,
vLLM's structured outputs a grammar too) so that a sampled reply parses. Generated from the
operation registry (nader.compiler.grammar_export), so it names the operations this nadc knows.
"""
from __future__ import annotations

import click

from nader.compiler.grammar_export import FORMATS, REPLIES, render


@click.command("grammar")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="gbnf", show_default=True,
              help="`gbnf`: llama.cpp's grammar format; `lark`: a Lark grammar (start rule `start`); "
                   "`ebnf`: W3C-style notation for reading.")
@click.option("--reply", type=click.Choice(REPLIES), is_flag=False, flag_value="block", default=None,
              help="The grammar of an LLM's reply, as the Modifier sends it. `block` (also `--reply` alone): "
                   "one block of header, node and edge lines, no comment or blank line; `edits`: a header, then "
                   "a bounded number of edits of the parent block (`add`, `remove`, `replace`, `connect`, "
                   "`disconnect`), the profile's `reply = \"edits\"`.")
def grammar_cmd(fmt, reply):
    """Print the grammar of block files: operations and their parameters from the registry."""
    click.echo(render(fmt, reply), nl=False)
