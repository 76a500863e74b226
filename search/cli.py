"""`nader-search run`: the search's command line (`report`, `status`, `best` and `export` read a run: report/cli.py).

Exit status: 0 the search stopped normally with a trained architecture; 1 nothing trained
successfully; 2 an internal error, or usage (bad option, unreadable or refused file, missing dataset,
changed settings without --force, run directory in use), a damaged, empty or unwritable run
database (--repair salvages a damaged one), or a trial interrupted by the machine (disk full, I/O
error: run the same command again to resume); 3 the LLM endpoint stopped the search
(`llm-stopped`: it failed call after call, or a replay lacks an answer; run the same command
again to resume); 130 interrupted (run the same command again to resume). No traceback reaches
the user; ``NADER_DEBUG=1`` prints them.
"""
from __future__ import annotations

import json
import os
import sqlite3
import sys
import traceback
from pathlib import Path

import click

from nader.agents.llm.options import LLM_SETTINGS, RUN_CAPS
from nader.inputs import InputError
from nader.inputs.cli import options
from nader.runtime.cli import store_problem

from .settings import RUN_SETTINGS  # not .config: it loads the compiler, and --help needs none of it


def _strategy_epilog() -> str:
    from .strategies import STRATEGIES
    from .strategies.catalog import AUTO_SUMMARY, listing  # the built-in strategies' declarations: no strategy loads

    lines = ["\b", "Strategies (--strategy) and their options (--option KEY=VALUE):",
             f"  auto (the default): {AUTO_SUMMARY}"]
    for name, summary, declared in listing(STRATEGIES):
        opts = ", ".join(f"{k}={o.default}" for k, o in declared.items()) or "no options"
        lines.append(f"  {name}: {summary} [{opts}]")
    return "\n".join(lines)


class _RunCommand(click.Command):
    """`run`, whose epilog lists the strategies: built when help is shown, from their declarations
    (`strategies/catalog.py`), so that neither importing this module nor `--help` imports a strategy."""

    def format_epilog(self, ctx, formatter):
        self.epilog = _strategy_epilog()
        super().format_epilog(ctx, formatter)


@click.command("run", cls=_RunCommand,
               context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("config_file", required=False, type=click.Path(dir_okay=False), metavar="[SEARCH.toml]")
@options(*RUN_SETTINGS, layered=True)
def run_command(config_file, fmt, force, **flags):
    """Search for better architectures, starting from --from, and print the best one found.

    Every option can also come from SEARCH.toml (same names; flags override it). Rerunning the
    same command on the same --run-dir resumes the search where it stopped.
    """
    from nader.runtime.cli import terminate_like_interrupt

    terminate_like_interrupt()
    progress = None
    code = 1
    try:
        progress, code = _run(config_file, fmt, force, flags)
    except KeyboardInterrupt:
        click.echo("\ninterrupted; run the same command again to resume", err=True)
        code = 130
    finally:
        if progress is not None:
            progress.close()
    sys.exit(code)


def _run(config_file, fmt, force, flags):
    from nader.runtime.errors import ConfigError, DatasetError, RuntimeToolError
    from nader.runtime.integrity import StoreError

    from .config_file import read_toml
    from nader.agents.llm.client import observe_new_clients

    from .progress import LiveProgress
    from .session import run_search

    progress = None
    repair = flags.get("repair") == "store"  # `--repair` alone: recover a damaged store
    if repair:
        flags["repair"] = None
    progress_mode = flags.pop("progress_mode", None)
    try:
        toml = read_toml(config_file) if config_file else {}
        flags = _agent_flags(flags)
        given = {_FIELDS[k]: v for k, v in flags.items() if v is not None}
        for key in ("root", "data_dir", "run_dir", "proxy_cache"):
            if key in given:
                given[key] = str(Path(given[key]).expanduser())
        if "evaluator" in given:
            from .config_file import resolve_evaluator

            given["evaluator"] = resolve_evaluator(given["evaluator"])
        if "data_dir" in given:  # part of each job's identity: the same folder from any directory
            given["data_dir"] = str(Path(given["data_dir"]).resolve())
        if "proxy_cache" in given:  # a resume from another directory finds the same file
            given["proxy_cache"] = str(Path(given["proxy_cache"]).resolve())
        progress = LiveProgress(stream=sys.stderr, mode=progress_mode)
        progress.preamble = _table_summary({**toml, **given})  # shown once the checks pass and the run starts
        unwatch = observe_new_clients(progress.llm)  # the LLM strategies' clients report each call
        try:
            summary = run_search(toml, given, force=force, observer=progress)
        finally:
            unwatch()
        progress.close()
        for w in summary.warnings:
            click.echo(f"warning: {w}", err=True)
        if fmt == "json":
            click.echo(json.dumps(summary.to_json(), indent=2))
        else:
            click.echo(_summary_text(summary))
        if summary.stop.code == "llm-stopped":
            return progress, 3
        return progress, 0 if summary.best is not None else 1
    except (ConfigError, DatasetError, InputError) as exc:
        click.echo(f"error: {exc}", err=True)
        return progress, 2
    except StoreError as exc:  # damaged, empty or unwritable runs.sqlite
        from .store import lost_architectures

        return progress, store_problem(exc, repair, lost=(lost_architectures,))
    except RuntimeToolError as exc:  # RunLocked, InfrastructureError (disk full, ...) and the like
        click.echo(f"error: {exc}", err=True)
        return progress, 2
    except OSError as exc:
        from nader.runtime.faults import describe_os_error

        click.echo(f"error: {describe_os_error(exc)}", err=True)
        return progress, 2
    except sqlite3.Error as exc:
        click.echo(f"error: {exc}", err=True)
        return progress, 2
    except Exception as exc:  # never a traceback for the user
        stopped = _llm_stop(exc)
        if stopped is not None:
            click.echo(stopped[0], err=True)
            return progress, stopped[1]
        if os.environ.get("NADER_DEBUG"):
            traceback.print_exc()
        click.echo(f"internal error: {type(exc).__name__}: {exc} (set NADER_DEBUG=1 for details)", err=True)
        return progress, 2


def _llm_stop(exc: Exception):
    """(message, exit status) for an LLM client error that escaped the loop's clean stops, or None."""
    from nader.agents.llm.errors import LLMConfigError, LLMError

    from .loop import clean_stop

    if isinstance(exc, LLMConfigError):
        return f"error: {exc}", 2
    stop = clean_stop(exc) if isinstance(exc, LLMError) else None
    return None if stop is None else (f"stopped: {stop.message}", 3)


# Flags of `run` that are options of the LLM strategies (--option KEY=VALUE says the same): the
# shared LLM flags other than the run's caps, under their own names.
_AGENT_FLAGS = ("kb", *(s.name for s in LLM_SETTINGS if s not in RUN_CAPS))
# The settings a search keeps (SearchConfig fields): the flag's keyword -> the field
_FIELDS = {s.name: s.field for s in RUN_SETTINGS if s.toml or s.keyword}
_PATHS = ("kb", "llm_config", "replay")
_ABLATIONS = {"no_reader": "reader", "no_ranking": "ranking", "no_feedback": "feedback",
              "no_experience": "experience"}


def _agent_flags(flags: dict) -> dict:
    options = dict(flags.get("strategy_options") or {})
    for flag in _AGENT_FLAGS:
        value = flags.pop(flag, None)
        if value is not None:
            options[flag] = str(Path(value).expanduser()) if flag in _PATHS else value
    for flag, option in _ABLATIONS.items():
        if flags.pop(flag, False):
            options[option] = False
    flags["strategy_options"] = options or None
    return flags


def _table_summary(settings: dict) -> list:
    """A derived table's load summary (cells covered, unknown strings, missing numbers), for when
    the search starts; the table is opened once per process, so the search reuses it."""
    spec = settings.get("evaluator") or ""
    if not spec.startswith("table:"):
        return []
    from .evaluator import SEARCH_TRAINING_SETS
    from .tables.lookup import opened
    from .tables.base import TableError

    try:
        table = opened(spec, settings.get("table_map"))
    except TableError:
        return []  # the search's own check reports it
    dataset = settings.get("dataset") or "cifar10"
    return table.summary(SEARCH_TRAINING_SETS.get(dataset, dataset))


def _summary_text(s) -> str:
    from . import records

    lines = [f"stopped: {s.stop.message} ({s.seconds:.1f} s{', resumed' if s.resumed else ''})",
             records.summary_line(s.counts)]
    if s.proxies:
        from .proxies import session_line

        lines.append(session_line(s.proxies))
    b = s.best
    if b:
        lines.append(f"best: #{b['arch_id']} ({records.lineage(b)}) valid "
                     f"{records.number_text(b['valid_acc'], '.2f')}%, test {records.number_text(b['test_acc'], '.2f')}%, "
                     f"{records.human(b['params'])} params, {records.human(b['flops'])} FLOPs")
    else:
        lines.append("no architecture trained successfully")
    if s.failures:
        lines.append(records.failures_text(s.failures))
    lines.append(f"run directory: {s.run_dir} (nader-search status|best|export {s.run_dir})")
    return "\n".join(lines)


# ---------------------------------------------------------------------- reading commands
