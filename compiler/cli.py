"""`nadc`, the compiler's command line.

Subcommands live in their own modules and are imported only when run, so
`nadc --version` and `nadc fmt` start without importing torch. Exit status:
0 clean, 1 problems found, 2 usage or internal error.
"""
from __future__ import annotations

import importlib
import os
import sys

import click

from nader import __version__

# name -> (module, function, one-line help); loaded lazily.
COMMANDS = {
    "compile": ("nader.compiler.commands.compile", "compile_cmd", "Parse FILEs and emit IR, JSON, PyTorch or ONNX (the default command)."),
    "fmt": ("nader.compiler.commands.fmt", "fmt_cmd", "Print or write the canonical form of block files."),
    "verify": ("nader.compiler.commands.verify", "verify_cmd", "Check structure and shapes of every block, for all sizes."),
    "lint": ("nader.compiler.commands.lint", "lint_cmd", "Report style problems and suspicious-but-valid patterns."),
    "cost": ("nader.compiler.commands.cost", "cost_cmd", "Fit networks to a budget; print widths, parameters and FLOPs."),
    "hash": ("nader.compiler.commands.hash", "hash_cmd", "Print the canonical hash of each block."),
    "diff": ("nader.compiler.commands.diff", "diff_cmd", "Show nodes and edges added, removed or changed between two blocks."),
    "explain": ("nader.compiler.commands.explain", "explain_cmd", "Print the documentation of a diagnostic code, the operations or a mutation operator."),
}


class LazyDefaultGroup(click.Group):
    """Loads subcommands on use; `nadc FILE ...` means `nadc compile FILE ...`."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, help_text) for name, (_, _, help_text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def parse_args(self, ctx, args):
        if args and args[0] not in COMMANDS and args[0] not in ("--help", "-h", "--version"):
            args = ["compile", *args]
        return super().parse_args(ctx, args)


@click.group(cls=LazyDefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nadc")
def cli():
    """nadc: the compiler for NADER's block language.

    \b
    nadc FILE... --emit ir|json     compile (the default command)
    nadc fmt FILE... [--check|--write] [--renumber]
    nadc verify FILE... [--format json]
    nadc explain NAD104
    """


def main(argv=None):
    """Entry point: no traceback ever reaches the user (NADC_DEBUG=1 shows one)."""
    try:
        cli.main(args=argv, prog_name="nadc", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as error:  # noqa: BLE001 - the last line of defence
        if os.environ.get("NADC_DEBUG"):
            raise
        click.echo(f"nadc: internal error: {type(error).__name__}: {error}\n"
                   "This is a bug in nadc; rerun with NADC_DEBUG=1 for details.", err=True)
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":
    main()
