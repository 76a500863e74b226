"""Reading a run directory: `nader-search report RUN` writes the run's HTML report (and keeps it
fresh with --watch); `status`, `best` and `export` print its tree, its best architecture (or the
trained network, `best --emit`) and its records. `run` (search/cli.py) writes the tree; these
commands only read it, through the same store checks (a damaged store is one line, `--repair`
recovers what can be read)."""
from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import click

from nader.compiler.commands.common import PositiveFinite
from nader.inputs.writes import WriteRefused, write_file
from nader.runtime.cli import repair_cells, repair_option, store_problem, warn_problems

from ..cli import _objectives


def _stamp(run_dir: Path) -> tuple:
    """Changes whenever the run's database does (its WAL file takes the writes first)."""
    out = []
    for name in ("runs.sqlite", "runs.sqlite-wal"):
        try:
            st = (run_dir / name).stat()
            out.append((st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def write_report(run_dir: Path, output: Path, top: int, problems: list | None = None) -> tuple[int, int]:
    """Render and write through `write_file` (a browser reloading never sees half a file, a full disk
    leaves the last report); (archs, bytes).
    Damaged cells of the database are left out and described in `problems`."""
    from .load import load_run
    from .render import render

    run, archs = load_run(run_dir, problems)
    html = render(run, archs, top_n=top).encode("utf-8")
    write_file(output, html, what="report")
    return len(archs), len(html)


@click.command("report")
@click.argument("run_dirs", metavar="RUN...", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the HTML (default RUN/report.html; for several runs compare.html).")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 200),
              help="How many of the best architectures to show with drawings and diffs.")
@click.option("--watch", "watch", is_flag=False, flag_value=5.0, default=None, type=PositiveFinite(least=0.5, most=86400.0),
              metavar="[SECONDS]", help="Rewrite the report whenever the run changes (polls every SECONDS, default 5); Ctrl-C stops.")
@repair_option
def report_command(run_dirs: tuple, output, top: int, watch, repair):
    """Write a self-contained HTML report of the search in RUN: summary, modification tree,
    curves, top architectures with drawings and diffs, failures. It needs no server and no
    network; open it from disk.

    With several RUNs, one page compares them: each run's best validation accuracy against
    trials, coloured by strategy, and the mean and spread per strategy at a few trial counts.
    """
    from nader.runtime.integrity import StoreError

    from .load import RunNotFound

    if len(run_dirs) > 1:
        _compare(run_dirs, output or Path("compare.html"), watch, repair)
        return
    run_dir = run_dirs[0]
    output = output or run_dir / "report.html"
    _claim(output)
    problems: list = []
    try:
        n, size = write_report(run_dir, output, top, problems)
    except RunNotFound as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except StoreError as error:
        sys.exit(store_problem(error, repair))
    except sqlite3.Error as error:  # a page gone bad since the check
        click.echo(f"error: cannot read {run_dir / 'runs.sqlite'}: {error}", err=True)
        sys.exit(2)
    except (WriteRefused, OSError) as error:  # OSError: a file of the run unreadable
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    if repair and (code := repair_cells(run_dir)) is not None:
        sys.exit(code)
    warn_problems(problems)
    click.echo(f"{output} ({n} architectures, {size / 1e6:.2f} MB)")
    if watch is None:
        return
    last = _stamp(run_dir)
    try:
        while True:
            time.sleep(watch)
            now = _stamp(run_dir)
            if now != last:
                last = now
                try:
                    n, size = write_report(run_dir, output, top)
                except (StoreError, sqlite3.Error, OSError, WriteRefused) as error:  # damaged or gone while watched
                    click.echo(f"error: {error}", err=True)
                    sys.exit(2)
                click.echo(f"{time.strftime('%H:%M:%S')} {output} ({n} architectures, {size / 1e6:.2f} MB)")
    except KeyboardInterrupt:
        click.echo("stopped watching", err=True)


def _compare(run_dirs, output: Path, watch, repair: bool = False) -> None:
    from nader.runtime.integrity import StoreError

    from .compare import write_compare
    from .load import RunNotFound

    if watch is not None:
        click.echo("error: --watch takes one RUN", err=True)
        sys.exit(2)
    _claim(output)
    try:
        size = write_compare(run_dirs, output)
    except RunNotFound as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except StoreError as error:
        sys.exit(store_problem(error, repair))
    except (WriteRefused, OSError) as error:  # OSError: a file of a run unreadable
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    click.echo(f"{output} ({len(run_dirs)} runs compared, {size / 1e6:.2f} MB)")


def _open(run_dir, repair: bool = False):
    from nader.runtime.integrity import StoreError

    from ..store import open_readonly

    try:
        conn = open_readonly(run_dir)
    except StoreError as exc:
        sys.exit(store_problem(exc, repair))
    except (FileNotFoundError, sqlite3.Error) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if repair and (code := repair_cells(run_dir)) is not None:
        conn.close()
        sys.exit(code)
    return conn


def _read(run_dir, repair: bool, read):
    """`read(conn, problems)` on the run's database; damaged cells become warnings, an error
    while reading (a page gone bad since the check) one line."""
    conn = _open(run_dir, repair)
    problems: list = []
    try:
        out = read(conn, problems)
    except sqlite3.Error as exc:
        click.echo(f"error: cannot read {Path(run_dir) / 'runs.sqlite'}: {exc}", err=True)
        sys.exit(2)
    finally:
        conn.close()
    warn_problems(problems)
    return out


def _claim(output) -> None:
    """Refuse, before reading the run, an output that is a run directory's own file (`-o
    RUN/runs.sqlite`) or several outputs on one file (nader.runtime.outputs)."""
    from nader.runtime.outputs import claim

    try:
        claim([output])
    except WriteRefused as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


def _write(text: str, output) -> None:
    """`-o FILE` through `write_file` (a failure leaves FILE as it was), else standard output."""
    if output:
        try:
            write_file(output, text, what="output")
        except WriteRefused as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
    else:
        click.echo(text, nl=False)


@click.command("status", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_dir", type=click.Path(file_okay=False), metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
@repair_option
def status_command(run_dir, fmt, repair):
    """Show a search's modification tree: every architecture under its parent."""
    from .. import records

    def read(conn, problems):
        from nader.runtime.integrity import json_cell

        recs = records.records(conn, with_text=False, problems=problems)
        rows = conn.execute("SELECT session, started, ended, stop_reason FROM search_sessions ORDER BY session")
        sessions = [dict(zip(("session", "started", "ended", "stop_reason"), tuple(r))) for r in rows]
        cfg = conn.execute("SELECT value FROM meta WHERE key='search.config'").fetchone()
        cfg = (json_cell(cfg[0], "meta", "key=search.config", "value", problems, (dict,)) if cfg else None) or {}
        return recs, sessions, cfg, records.failures(conn)

    recs, sessions, cfg, failures = _read(run_dir, repair, read)
    if fmt == "json":
        click.echo(json.dumps({"config": {k: v for k, v in cfg.items() if k != "root_text"}, "sessions": sessions,
                               "proposals": records.proposal_counts(recs), "archs": recs, "failures": failures},
                              indent=2, default=str))
        return
    last = sessions[-1]["stop_reason"] if sessions else None
    state = last or ("running or killed" if sessions else "not started")
    origin = cfg.get("root") or f"the {cfg.get('space', '?')} space's root"
    click.echo(f"{cfg.get('strategy', '?')} on {cfg.get('dataset', '?')} from {origin}; "
               f"{len(sessions)} session(s), last: {state}")
    click.echo(records.summary_line(records.counts_of(recs)))
    if failures:
        click.echo(records.failures_text(failures))
    proposals = records.proposals_line(records.proposal_counts(recs))
    if proposals:
        click.echo(proposals)
    click.echo(records.status_table(recs))


@click.command("best", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_dir", type=click.Path(file_okay=False), metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(("nad", "json")), default="nad", show_default=True,
              help="nad: the architecture's text (a comment line, then the blocks); json: its whole record.")
@click.option("--trial", type=click.IntRange(min=0), default=None, metavar="N",
              help="Architecture #N instead of the best (ids as `nader-search status` lists them).")
@click.option("--emit", type=click.Choice(("nad", "torch", "onnx")), default=None,
              help="Write the trained network, ready to rebuild: nad (the architecture with a network line "
                   "`nadc ARCH.nad --emit torch` reads), torch (standalone PyTorch source) or onnx. Needs -o.")
@click.option("--weights", is_flag=True,
              help="--emit: also the trained weights: OUT.pt, a state_dict for the emitted network (onnx: "
                   "its initializers).")
@click.option("--seed", "weights_seed", type=int, default=None,
              help="--weights: the seed whose training to take [default: the one with the best validation accuracy].")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write to a file.")
@click.option("--pareto", is_flag=True,
              help="List the non-dominated set over the run's objectives (a table; --format json: the records).")
@click.option("--objective", "objectives", callback=_objectives, default=None, metavar="NAME:max|min,...",
              help="--pareto over these objectives instead of the run's.")
@repair_option
def best_command(run_dir, fmt, trial, emit, weights, weights_seed, output, pareto, objectives, repair):
    """Print the best architecture (highest validation accuracy), ready for nadc; --pareto: the
    non-dominated set; with --emit, write the trained network (and with --weights its weights) so
    that it rebuilds from the file alone."""
    from .. import records

    if pareto or objectives:
        _best_pareto(run_dir, fmt, output, objectives, repair)
        return
    if emit is None:
        if weights or weights_seed is not None:
            click.echo("error: --weights and --seed go with --emit nad|torch|onnx", err=True)
            sys.exit(2)
        if trial is not None:
            def pick(conn, problems):
                return next((r for r in records.records(conn, problems=problems) if r["arch_id"] == trial), None)
            rec = _read(run_dir, repair, pick)
            if rec is None:
                click.echo(f"error: {run_dir} has no architecture #{trial}", err=True)
                sys.exit(2)
        else:
            rec = _read(run_dir, repair, lambda conn, problems: records.best(conn, problems))
        if rec is None:
            click.echo(f"error: no architecture of {run_dir} has trained successfully yet", err=True)
            sys.exit(1)
        _write(json.dumps(rec, indent=2, default=str) + "\n" if fmt == "json" else records.best_text(rec), output)
        return
    _emit_best(run_dir, emit, output, weights, trial, weights_seed, repair)


def _emit_best(run_dir, emit, output, weights, trial, seed, repair) -> None:
    from ..best_model import ExportError, export

    if not output:
        click.echo(f"error: --emit {emit} writes files: give -o OUT (e.g. -o best.{'py' if emit == 'torch' else emit})",
                   err=True)
        sys.exit(2)
    try:
        written = _read(run_dir, repair, lambda conn, problems: export(run_dir, conn, emit, Path(output),
                                                                       weights=weights, trial=trial, seed=seed,
                                                                       problems=problems))
    except ExportError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.code)
    for path in written:
        click.echo(f"wrote {path}", err=True)


def _best_pareto(run_dir, fmt, output, objectives, repair) -> None:
    from nader.runtime.errors import ConfigError

    from .. import records

    def read(conn, problems):
        chosen = objectives or records.objectives_of(conn)
        return chosen, records.pareto(conn, chosen, problems)

    try:
        chosen, front = _read(run_dir, repair, read)
    except ConfigError as exc:  # pymoo missing for several objectives
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if not front:
        click.echo(f"error: no architecture of {run_dir} has every objective's value yet "
                   f"({', '.join(chosen)})", err=True)
        sys.exit(1)
    _write(json.dumps(front, indent=2, default=str) + "\n" if fmt == "json" else records.pareto_table(front, chosen),
           output)


@click.command("export", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_dir", type=click.Path(file_okay=False), metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(("csv", "json")), default="csv", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write to a file.")
@repair_option
def export_command(run_dir, fmt, output, repair):
    """Export every architecture's record (one row each; per-seed results included)."""
    from .. import records

    if output:
        _claim(output)
    recs = _read(run_dir, repair, lambda conn, problems: records.records(conn, problems=problems))
    _write(records.export_json(recs) if fmt == "json" else records.export_csv(recs), output)
