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

from nader.inputs.cli import options
from nader.inputs.settings import Choice, Flag, Integer, Path as PathKind, Real, Setting, output_format
from nader.inputs.writes import WriteRefused, write_file
from nader.runtime.cli import repair_cells, store_problem, warn_problems
from nader.runtime.options import REPAIR_STORE

from ..settings import BY_NAME


_OUTPUT = Setting(("-o", "--output"), PathKind("file"), "Write to a file.")


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


def write_report(run_dir: Path, output: Path, top: int, problems: list | None = None,
                 repairing: bool = False) -> tuple[int, int]:
    """Render and write through `write_file` (a browser reloading never sees half a file, a full disk
    leaves the last report); (archs, bytes). Damaged cells of the database are left out and
    described in `problems`, as is an index that disagrees with its table (raised when `repairing`)."""
    from .load import load_run
    from .render import render_report

    run, archs = load_run(run_dir, problems, repairing)
    html = render_report(run, archs, top_n=top).encode("utf-8")
    write_file(output, html, what="report")
    return len(archs), len(html)


@click.command("report")
@click.argument("run_dirs", metavar="RUN...", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@options(_OUTPUT.but(kind=PathKind("file", as_path=True), help="Where to write the HTML.",
                     shown_default="RUN/report.html; for several runs compare.html"),
         Setting("--top", Integer(1, 200), "How many of the best architectures to show with drawings and diffs.",
                 default=10),
         Setting("--watch", Real(0.5, 86400.0, positive=True), flag_value=5.0, metavar="[SECONDS]",
                 help="Rewrite the report whenever the run changes (polls every SECONDS, default 5); Ctrl-C stops."),
         REPAIR_STORE)
def report_command(run_dirs: tuple, output, top: int, watch, repair):
    """Write a self-contained HTML report of the search in RUN: summary, modification tree,
    curves, top architectures with drawings and diffs, failures. It needs no server and no
    network; open it from disk.

    With several RUNs, one page compares them: each run's best validation accuracy against
    trials, coloured by strategy, and the mean and spread per strategy at a few trial counts.
    """
    from nader.runtime.integrity import StoreError

    from ..store import RunNotFound, lost_architectures

    if len(run_dirs) > 1:
        _compare(run_dirs, output or Path("compare.html"), watch, repair)
        return
    run_dir = run_dirs[0]
    output = output or run_dir / "report.html"
    _claim(output)
    problems: list = []
    try:
        n, size = write_report(run_dir, output, top, problems, repairing=repair)
    except RunNotFound as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except StoreError as error:
        sys.exit(store_problem(error, repair, lost=(lost_architectures,)))
    except sqlite3.Error as error:  # a page gone bad since the check
        click.echo(f"error: cannot read {run_dir / 'runs.sqlite'}: {error}", err=True)
        sys.exit(2)
    except (WriteRefused, OSError) as error:  # OSError: a file of the run unreadable
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    if repair and (code := repair_cells(run_dir, lost=(lost_architectures,))) is not None:
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

    from ..store import RunNotFound, lost_architectures
    from .compare import write_compare

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
        sys.exit(store_problem(error, repair, lost=(lost_architectures,)))
    except (WriteRefused, OSError) as error:  # OSError: a file of a run unreadable
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    click.echo(f"{output} ({len(run_dirs)} runs compared, {size / 1e6:.2f} MB)")


def _open(run_dir, repair: bool = False):
    """The run's reader, after the full integrity check: a damaged store is one line (with
    --repair, recovered); an index that disagrees with its table is a warning (with --repair,
    recovered, as `run` would ask)."""
    from nader.runtime.integrity import StoreError

    from ..store import RunReader, lost_architectures

    try:
        reader = RunReader(run_dir, repairing=repair)
    except StoreError as exc:
        sys.exit(store_problem(exc, repair, lost=(lost_architectures,)))
    except (FileNotFoundError, sqlite3.Error) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if repair and (code := repair_cells(run_dir, lost=(lost_architectures,))) is not None:
        reader.close()
        sys.exit(code)
    return reader


def _read(run_dir, repair: bool, read):
    """`read(reader, problems)` on the run; an index mismatch and damaged cells become warnings, an
    error while reading (a page gone bad since the check) one line."""
    reader = _open(run_dir, repair)
    problems: list = list(reader.warnings)
    try:
        out = read(reader, problems)
    except sqlite3.Error as exc:
        click.echo(f"error: cannot read {Path(run_dir) / 'runs.sqlite'}: {exc}", err=True)
        sys.exit(2)
    finally:
        reader.close()
    warn_problems(problems)
    return out


def _claim(*outputs) -> None:
    """Refuse, before reading the run, an output that is a run directory's own file (`-o
    RUN/runs.sqlite`) or several outputs on one file (nader.runtime.outputs)."""
    from nader.runtime.outputs import claim

    try:
        claim(outputs)
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
@options(output_format("table", "json"), REPAIR_STORE)
def status_command(run_dir, fmt, repair):
    """Show a search's modification tree: every architecture under its parent."""
    from .. import records
    from ..proxies import stored_lines

    def read(reader, problems):
        recs = records.records(reader, with_text=False, problems=problems)
        return (recs, reader.sessions(), reader.stored_config(problems), records.failures(reader),
                reader.proxy_stats())

    recs, sessions, cfg, failures, proxies = _read(run_dir, repair, read)
    if fmt == "json":
        click.echo(json.dumps({"config": {k: v for k, v in cfg.items() if k != "root_text"}, "sessions": sessions,
                               "proposals": records.proposal_counts(recs), "archs": recs, "failures": failures,
                               "proxies": proxies}, indent=2, default=str))
        return
    last = sessions[-1]["stop_reason"] if sessions else None
    state = last or ("running or killed" if sessions else "not started")
    origin = cfg.get("root") or f"the {cfg.get('space', '?')} space's root"
    click.echo(f"{cfg.get('strategy', '?')} on {cfg.get('dataset', '?')} from {origin}; "
               f"{len(sessions)} session(s), last: {state}")
    click.echo(records.summary_line(records.counts_of(recs)))
    for line in stored_lines(proxies):
        click.echo(line)
    if failures:
        click.echo(records.failures_text(failures))
    proposals = records.proposals_line(records.proposal_counts(recs))
    if proposals:
        click.echo(proposals)
    click.echo(records.status_table(recs))


@click.command("best", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("run_dir", type=click.Path(file_okay=False), metavar="RUN")
@options(output_format("nad", "json", help="nad: the architecture's text (a comment line, its network line, then "
                                             "the blocks); json: its whole record."),
         Setting("--trial", Integer(0), metavar="N",
                 help="Architecture #N instead of the best (ids as `nader-search status` lists them)."),
         Setting("--emit", Choice(("nad", "torch", "onnx"), case_sensitive=True),
                 help="Write the network of the best architecture (or --trial N's, whoever evaluated it) at the "
                      "widths it was searched with, ready to rebuild: nad (the architecture with a network line "
                      "`nadc ARCH.nad --emit torch` reads), torch (standalone PyTorch source) or onnx; beside it "
                      "OUT.json states its input, classes and normalisation. Needs -o."),
         Setting("--weights", Flag(), "--emit: also the trained weights (a training's checkpoint, or what a Python "
                                      "objective saved with arch.save_weights): OUT.pt, a state_dict that loads "
                                      "strictly into the emitted network (onnx: its initializers); refused where "
                                      "there are none."),
         BY_NAME["seed"].but(name="weights_seed", default=None, shown_default="the one with the best validation "
                                                                              "accuracy",
                             help="--emit: the seed whose results (and with --weights, trained weights) to take."),
         _OUTPUT,
         Setting("--pareto", Flag(), "List the non-dominated set over the run's objectives (a table; --format json: "
                                     "the records)."),
         BY_NAME["objective"].but(name="objectives", help="--pareto over these objectives instead of the run's.", shown_default=None),
         REPAIR_STORE)
def best_command(run_dir, fmt, trial, emit, weights, weights_seed, output, pareto, objectives, repair):
    """Print the best architecture (highest validation accuracy), ready for nadc; --pareto: the
    non-dominated set; with --emit, write its network (or any trial's) at the widths it was searched
    with, and with --weights its trained weights, so that it rebuilds from the file alone."""
    from .. import records

    if output:
        _claim(output)  # before the run is read: never its own database, lock or checkpoints
    if pareto or objectives:
        _best_pareto(run_dir, fmt, output, objectives, repair)
        return
    if emit is None:
        if weights or weights_seed is not None:
            click.echo("error: --weights and --seed go with --emit nad|torch|onnx", err=True)
            sys.exit(2)

        def pick(reader, problems):
            from ..trial_network import network_of

            if trial is None:
                rec = records.best(reader, problems)
            else:
                rec = next((r for r in records.records(reader, problems=problems) if r["arch_id"] == trial), None)
            return rec, (network_of(reader.stored_config(problems=[]), rec) if rec is not None else None)

        rec, net = _read(run_dir, repair, pick)
        if rec is None and trial is not None:
            click.echo(f"error: {run_dir} has no architecture #{trial}", err=True)
            sys.exit(2)
        if rec is None:
            click.echo(f"error: no architecture of {run_dir} has trained successfully yet", err=True)
            sys.exit(1)
        if fmt == "json":
            _write(json.dumps(rec, indent=2, default=str) + "\n", output)
        else:
            from ..trial_network import network_line

            _write(network_line(rec, net), output)
        return
    _emit_best(run_dir, emit, output, weights, trial, weights_seed, repair)


def _emit_best(run_dir, emit, output, weights, trial, seed, repair) -> None:
    from ..best_model import ExportError, claim_export, export

    if not output:
        click.echo(f"error: --emit {emit} writes files: give -o OUT (e.g. -o best.{'py' if emit == 'torch' else emit})",
                   err=True)
        sys.exit(2)
    try:
        claim_export(emit, output, weights)  # OUT, OUT.pt, OUT.json: before the run is read
        done = _read(run_dir, repair, lambda reader, problems: export(run_dir, reader, emit, Path(output),
                                                                      weights=weights, trial=trial, seed=seed,
                                                                      problems=problems))
    except ExportError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.code)
    for note in done.notes:
        click.echo(note, err=True)
    for path in done.paths:
        click.echo(f"wrote {path}", err=True)


def _best_pareto(run_dir, fmt, output, objectives, repair) -> None:
    from nader.runtime.errors import ConfigError

    from .. import records

    def read(reader, problems):
        chosen = objectives or records.objectives_of(reader)
        return chosen, records.pareto(reader, chosen, problems)

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
@options(output_format("csv", "json"), _OUTPUT, REPAIR_STORE)
def export_command(run_dir, fmt, output, repair):
    """Export every architecture's record (one row each; per-seed results included)."""
    from .. import records

    if output:
        _claim(output)
    recs = _read(run_dir, repair, lambda reader, problems: records.records(reader, problems=problems))
    _write(records.export_json(recs) if fmt == "json" else records.export_csv(recs), output)
