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
import re
import sqlite3
import sys
import traceback
from pathlib import Path

import click

from nader.agents.llm.cli import llm_options
from nader.agents.llm.options import LLM_FLAGS
from nader.inputs import InputError
from nader.runtime.cli import executor_option, progress_option, store_problem, trial_timeout_option
from nader.runtime.cli import memory_size as _memory  # eval's --max-memory too

from .config_file import DATASETS, PROXIES  # not .config: it loads the compiler, and --help needs none of it

_SI = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}


def _count(ctx, param, value):
    """Integers with an optional K/M/G suffix (1.5M, 0.2G)."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)\s*", value)
    if not m:
        raise click.BadParameter("expected a number such as 1500000, 1.5M or 0.2G")
    return int(round(float(m.group(1)) * _SI[m.group(2).lower()]))


def _time_limit(ctx, param, value):
    """A wall-clock duration, or simulated seconds of a tabular benchmark (sim:20000)."""
    from nader.runtime.errors import ConfigError

    from .config_file import parse_time_limit

    if value is None:
        return None
    try:
        return parse_time_limit(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc).partition(": ")[2]) from None


def _table_map(ctx, param, value):
    from nader.runtime.errors import ConfigError

    from .config_file import parse_table_map
    from .evaluators.table import check_table_map

    if value is None:
        return None
    try:
        mapping = parse_table_map(value)
        check_table_map(mapping)
    except ConfigError as exc:
        raise click.BadParameter(str(exc).partition(": ")[2]) from None
    return mapping


def _objectives(ctx, param, value):
    from nader.runtime.errors import ConfigError

    from .config_file import parse_objective_list

    if value is None:
        return None
    try:
        return parse_objective_list(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from None


def _int_list(ctx, param, value):
    if value is None:
        return None
    try:
        out = [int(s) for s in value.replace(" ", "").split(",") if s]
    except ValueError:
        raise click.BadParameter("expected comma-separated integers, e.g. 777,888,999") from None
    if not out:
        raise click.BadParameter("expected at least one integer")
    return out


def _options(ctx, param, values):
    out = {}
    for v in values or ():
        key, sep, val = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}")
        out[key.strip().replace("-", "_")] = val.strip()
    return out or None


def _strategy_epilog() -> str:
    from .strategies.catalog import listing  # the built-in strategies' declarations: no strategy module loads

    lines = ["\b", "Strategies (--strategy) and their options (--option KEY=VALUE):"]
    for name, summary, options in listing():
        opts = ", ".join(f"{k}={o.default}" for k, o in options.items()) or "no options"
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
@click.option("--from", "root", type=click.Path(dir_okay=False), default=None,
              help="The root architecture (.nad): the tree starts here.")
@click.option("--root", "root_mode", type=click.Choice(("train", "none")), default=None,
              help="train: the root is trial 1; none: it is never trained and the first trials are the "
                   "strategy's own, as in published NAS-Bench-201 baselines [default: none for random, rea "
                   "and local in --space nb201, else train].")
@click.option("--strategy", default=None, help="A strategy listed below [default: rea].")
@click.option("--option", "strategy_options", multiple=True, callback=_options, metavar="KEY=VALUE",
              help="A strategy option (repeatable), e.g. --option population=10.")
@click.option("--dataset", type=click.Choice(DATASETS, case_sensitive=False), default=None,
              help="[default: digits] All but digits are read from --data-dir; cifar10 and cifar10-valid both train NB201's cifar10-valid setting (25k/25k).")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None, envvar="NADER_DATA_DIR",
              help="Folder with the dataset files [env NADER_DATA_DIR].")
@click.option("--preset", default=None, help="Training preset: quick, nb201-12, nb201-N, nb201 [default: quick].")
@click.option("--seeds", callback=_int_list, default=None, help="Seeds per architecture [default: the preset's].")
@click.option("--skeleton", default=None, help="Network skeleton: nb201, imagenet, darts [default: nb201; the space's].")
@click.option("--space", type=click.Choice(("language", "nb201")), default=None,
              help="Search space: language (any block) or nb201 (NAS-Bench-201's cells on its network; "
                   "mutations change one edge's operation) [default: language].")
@click.option("--evaluator", default=None, metavar="training|nats-bench:PATH|nas-bench-201:PATH|table:PATH",
              help="Answer trials from a tabular benchmark file instead of training (the user supplies "
                   "the file; table: a derived .csv or .json table; documentation page 'NAS-Bench-201'), or a "
                   "registered evaluator's NAME (documentation page 'The Python API') [default: training].")
@click.option("--table-map", callback=_table_map, default=None, metavar="METRIC=COLUMN,...",
              help="table: which columns hold the metrics, e.g. valid_acc@12=val_acc,test_acc@200=test_acc "
                   "[default: columns named as the metrics].")
@click.option("--depths", callback=_int_list, default=None, help="Blocks per stage [default: the skeleton's].")
@click.option("--objective", "objectives", callback=_objectives, default=None, metavar="NAME:max|min,...",
              help="What the search optimises: valid_acc, params, flops, latency (ms on the training device); "
                   "several rank by non-domination (needs pymoo) [default: valid_acc:max].")
@click.option("--trials", type=click.IntRange(min=1), default=None,
              help="Architectures to train, the root included [default: 30].")
@click.option("--max-invalid", type=click.IntRange(min=1), default=None,
              help="Stop after this many invalid proposals in a row (the strategy wrote no valid "
                   "architecture) [default: 10].")
@click.option("--time-limit", callback=_time_limit, default=None,
              help="Start no trial after this long (600, 10m, 2h); running ones finish. With a tabular "
                   "evaluator, sim:20000 counts the table's simulated training time instead.")
@executor_option(None, "Where trials train: local (in this process), pool (worker processes), ray [default: local].")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Pool workers / local Ray CPUs.")
@click.option("--address", default=None, help="Ray cluster address ('auto' or HOST:PORT).")
@click.option("--run-dir", type=click.Path(file_okay=False), default=None,
              help="Run directory [default: runs/<root>-<strategy>-<dataset>-seed<seed>]; the same command resumes.")
@click.option("--seed", type=int, default=None, help="Seed of the search's decisions [default: 0].")
@click.option("--prescreen", type=click.IntRange(min=0), default=None,
              help="Make K valid candidates per trial, train the best by a zero-cost proxy [default: 0, off].")
@click.option("--proxy", type=click.Choice(PROXIES), default=None, help="Prescreening proxy [default: naswot].")
@click.option("--max-params", callback=_count, default=None, help="Parameter budget (e.g. 1.5M) [default: preset].")
@click.option("--max-flops", callback=_count, default=None, help="FLOPs budget (e.g. 0.2G) [default: preset].")
@click.option("--max-memory", callback=_memory, default=None,
              help="Training memory per trial (e.g. 6G; a number is MiB): a candidate whose training step needs "
                   "more is over budget [default: half the RAM, or 90% of the GPU's memory].")
@click.option("--epochs", type=click.IntRange(min=1), default=None, help="Override the preset's epochs.")
@click.option("--fidelity", type=click.Choice(("successive-halving", "hyperband")), default=None,
              help="Train new architectures briefly and promote the best 1/eta to longer budgets, up to the "
                   "full one [default: off, every trial at the full budget].")
@click.option("--eta", type=click.IntRange(min=2), default=None, help="--fidelity: promotion rate [default: 3].")
@click.option("--min-epochs", type=click.IntRange(min=1), default=None,
              help="--fidelity: the lowest rung's epochs [default: the full budget / eta^2, rounded up].")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="torch threads per trial.")
@click.option("--device", default=None, help="cpu, cuda, cuda:N [default: auto].")
@trial_timeout_option()
@click.option("--trials-per-gpu", type=click.IntRange(min=1), default=None,
              help="Pool on GPUs: trials per device [default: chosen from the first trial's memory].")
@click.option("--kb", default=None, type=click.Path(file_okay=False),
              help="nader, fairnad: the knowledge base directory (filled by `nader-search read`).")
@llm_options
@click.option("--no-reader", "no_reader", is_flag=True, help="nader ablation: candidate ideas drawn at random.")
@click.option("--no-proposer-ranking", "no_ranking", is_flag=True,
              help="nader ablation: take the most similar idea, no LLM ranking.")
@click.option("--no-feedback", "no_feedback", is_flag=True,
              help="nader ablation: one Modifier round, no compiler feedback.")
@click.option("--no-experience", "no_experience", is_flag=True, help="nader ablation: no Reflector lessons.")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
@progress_option("stderr while searching: rich (a live display), plain (one line per finished trial, for logs "
                 "and batch jobs), off; auto: rich on a terminal, else plain.")
@click.option("--force", is_flag=True, help="Continue a run directory's tree with changed settings.")
@click.option("--builder", default=None, hidden=True, help="module:function building networks (testing).")
@click.option("--repair", type=click.Choice(("off", "suggest", "auto", "store")), is_flag=False, flag_value="store",
              default=None, metavar="[off|suggest|auto]",
              help="The compiler's repair of blocks the LLM writes (nader, fairnad, genius on blocks): auto [their "
                   "default] takes the repaired block and records it, suggest shows the LLM the fix in its "
                   "feedback, off neither. "
                   "`--repair` alone (or `store`): if RUN/runs.sqlite is damaged, copy what can still be read into "
                   "RUN/runs.recovered.sqlite, say what was recovered and lost, and stop.")
def run_command(config_file, fmt, force, **flags):
    """Search for better architectures, starting from --from, and print the best one found.

    Every option can also come from SEARCH.toml (same names; flags override it). Rerunning the
    same command on the same --run-dir resumes the search where it stopped.
    """
    from nader.runtime.cli import _terminate_like_interrupt

    _terminate_like_interrupt()
    _run_caps(flags)
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


# The LLM flags that cap the whole run: the loop's own stops (cost-limit, token-limit) and the client's caps.
_RUN_CAPS = {"llm_max_cost": "max_cost", "llm_max_tokens": "max_tokens"}


def _run_caps(flags: dict) -> None:
    for flag, field in _RUN_CAPS.items():
        flags[field] = flags.pop(flag, None)


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
        given = {k: v for k, v in flags.items() if v is not None}
        if "dataset" in given:
            given["dataset"] = given["dataset"].lower()
        if "executor" in given:
            given["executor"] = given["executor"].lower()
        for key in ("root", "data_dir", "run_dir"):
            if key in given:
                given[key] = str(Path(given[key]).expanduser())
        if "evaluator" in given:
            from .config_file import resolve_evaluator

            given["evaluator"] = resolve_evaluator(given["evaluator"])
        if "data_dir" in given:  # part of each job's identity: the same folder from any directory
            given["data_dir"] = str(Path(given["data_dir"]).resolve())
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
        return progress, store_problem(exc, repair)
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
_AGENT_FLAGS = ("kb", *(f.name for f in LLM_FLAGS if not f.run_cap))
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
    from .evaluators.lookup import opened
    from .evaluators.tabular import EvaluatorError

    try:
        table = opened(spec, settings.get("table_map"))
    except EvaluatorError:
        return []  # the search's own check reports it
    dataset = settings.get("dataset") or "cifar10"
    return table.summary(SEARCH_TRAINING_SETS.get(dataset, dataset))


def _summary_text(s) -> str:
    from . import records

    lines = [f"stopped: {s.stop.message} ({s.seconds:.1f} s{', resumed' if s.resumed else ''})",
             records.summary_line(s.counts)]
    b = s.best
    if b:
        lines.append(f"best: #{b['arch_id']} ({records.lineage(b)}) valid "
                     f"{records._num(b['valid_acc'], '.2f')}%, test {records._num(b['test_acc'], '.2f')}%, "
                     f"{records.human(b['params'])} params, {records.human(b['flops'])} FLOPs")
    else:
        lines.append("no architecture trained successfully")
    if s.failures:
        lines.append(records.failures_text(s.failures))
    lines.append(f"run directory: {s.run_dir} (nader-search status|best|export {s.run_dir})")
    return "\n".join(lines)


# ---------------------------------------------------------------------- reading commands
