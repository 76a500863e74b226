"""`nader-search`: the command line of the search, the agents and the runtime, at the top of the
package so that it dispatches only downward (search, agents, runtime).

Commands are imported only when used (``nader-search --help`` stays fast): ``eval`` lives in
``nader.runtime.cli``. Add a command by decorating it with ``@main.command()`` here, or lazily
by adding ``"name": "module:attribute"`` to ``LAZY_COMMANDS``.
"""
from __future__ import annotations

import importlib
import os
import traceback

import click

from nader.inputs import InputError

LAZY_COMMANDS = {
    "bench-nad": "nader.agents.bench.cli:bench_nad_command",
    "eval": "nader.runtime.cli:eval_command",
    "kb": "nader.agents.knowledge.cli:kb_group",
    "llm": "nader.agents.llm.cli:llm_group",
    "read": "nader.agents.reader.cli:read_command",
    "run": "nader.search.cli:run_command",
    "status": "nader.search.report.cli:status_command",
    "best": "nader.search.report.cli:best_command",
    "export": "nader.search.report.cli:export_command",
    "report": "nader.search.report.cli:report_command",
}


class LazyGroup(click.Group):
    """A click group whose commands in `LAZY_COMMANDS` are imported on first use."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        cmd = super().get_command(ctx, name)
        if cmd is not None or name not in LAZY_COMMANDS:
            return cmd
        module, attr = LAZY_COMMANDS[name].split(":")
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx):
        """The last line of defence: a refused input is one line and exit 2, as is an internal error
        (the README's exit statuses); never a traceback unless NADER_DEBUG is set."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort, SystemExit, KeyboardInterrupt,
                BrokenPipeError):
            raise
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
        except Exception as exc:  # noqa: BLE001
            if os.environ.get("NADER_DEBUG"):
                traceback.print_exc()
            click.echo(f"internal error: {type(exc).__name__}: {exc} (set NADER_DEBUG=1 for details)", err=True)
        ctx.exit(2)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nader-toolchain", prog_name="nader-search")
def main():
    """NADER's agent loops and runtime: search for, evaluate and report on neural-network blocks."""


if __name__ == "__main__":  # pragma: no cover
    main()
