"""`nadc lsp`: the language server, over standard input and output.

pygls and lsprotocol are an optional extra (`pip install 'nader-toolchain[lsp]'`): they are
imported only when the server starts, so no other command pays for them.
"""
from __future__ import annotations

import click

from nader.inputs.cli import options
from nader.inputs.settings import Flag, Setting


@click.command("lsp")
@options(Setting("--stdio", Flag(), "Speak over standard input and output (the default and only transport; "
                                    "accepted because editors pass it)."))
def lsp_cmd(stdio):
    """Run the Language Server Protocol server for block files (diagnostics, hover shapes, completion,
    formatting, quick fixes, go to definition, references, rename, outline, folding).

    Editors start it themselves; the documentation page "Blocks in the editor" shows how for VS Code,
    Neovim, Helix and Emacs.
    """
    try:
        from nader.compiler.commands.lsp_server import serve
    except ImportError as error:
        raise click.UsageError(f"`nadc lsp` needs pygls and lsprotocol ({error.name} is missing): "
                               "pip install 'nader-toolchain[lsp]'") from None
    raise SystemExit(serve())
