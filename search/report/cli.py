"""`nader-search report RUN`: write the run's HTML report (and keep it fresh with --watch)."""
from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path

import click

from nader.compiler.commands.common import PositiveFinite
from nader.runtime.cli import repair_cells, repair_option, store_problem, warn_problems


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
    """Render and write atomically (a browser reloading never sees half a file); (archs, bytes).
    Damaged cells of the database are left out and described in `problems`."""
    from .load import load_run
    from .render import render

    run, archs = load_run(run_dir, problems)
    html = render(run, archs, top_n=top).encode("utf-8")
    tmp = output.with_name(f".{output.name}.tmp{os.getpid()}")
    tmp.write_bytes(html)
    os.replace(tmp, output)
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
    except OSError as error:
        click.echo(f"error: cannot write {output}: {error.strerror or error}", err=True)
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
                except (StoreError, sqlite3.Error, OSError) as error:  # damaged or gone while watched
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
    try:
        size = write_compare(run_dirs, output)
    except RunNotFound as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except StoreError as error:
        sys.exit(store_problem(error, repair))
    except OSError as error:
        click.echo(f"error: cannot write {output}: {error.strerror or error}", err=True)
        sys.exit(2)
    click.echo(f"{output} ({len(run_dirs)} runs compared, {size / 1e6:.2f} MB)")
