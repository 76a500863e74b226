"""`nader-search eval`: train and evaluate one architecture over several seeds.

Exit status: 0 every job ok, 1 some job failed or diverged, 2 an internal error or usage
(bad option, missing architecture file, missing or corrupt dataset, a run directory in use), a
damaged or unwritable run database, or a job interrupted by the machine (disk full, I/O error:
rerun to resume), 130 interrupted.
No traceback reaches the user; ``NADER_DEBUG=1`` prints them for developers.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import traceback
from pathlib import Path

import click

from nader.inputs import InputError, read_bounded_text
from nader.inputs.cli import options

from .faults import describe_os_error
from .numbers import human
from .options import EVAL_SETTINGS

ARCH_BYTES = 1 << 20  # nadc's default text limit


def _fmt(v, spec):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec)


def store_problem(exc, repair: bool, lost=()) -> int:
    """Report a StoreError in one line (or, with --repair on a damaged database, recover it and
    report that); the exit status: 2 for the error, 0 or 1 (rows lost) after a repair. `lost`:
    the checks of what a recovered copy lacks, from the layer whose tables they are
    (`recovery.LostCheck`; the search passes its own)."""
    from .integrity import StoreDamaged

    if not (repair and isinstance(exc, StoreDamaged) and exc.path is not None):
        click.echo(f"error: {exc}", err=True)
        return 2
    from .recovery import recover

    try:
        done = recover(exc.path, lost)
    except (OSError, sqlite3.Error) as error:
        click.echo(f"error: cannot repair {exc.path}: {error}", err=True)
        return 2
    click.echo(done.text())
    return 0 if done.rows and not done.lost else 1


def repair_cells(run_dir, lost=()):
    """`--repair` on a store that passed its check: unreadable cells (not UTF-8, nested too deep)
    rewritten as NULL in a copy, reported, and the exit status (1: those cells are lost); None,
    with a note, when there is nothing to repair (the command goes on). `lost` as in store_problem."""
    from .recovery import null_cells

    path = Path(run_dir) / "runs.sqlite"
    try:
        done = null_cells(path, lost)
    except (OSError, sqlite3.Error) as error:
        click.echo(f"error: cannot repair {path}: {error}", err=True)
        return 2
    if done is None:
        click.echo(f"note: {path} passed the integrity check and every cell is readable; nothing to repair", err=True)
        return None
    click.echo(done.text())
    return 1


def warn_problems(problems) -> None:
    """The damaged cells met while reading, one warning line each (at most 20, then a count)."""
    problems = list(dict.fromkeys(problems))
    for p in problems[:20]:
        click.echo(f"warning: {p}", err=True)
    if len(problems) > 20:
        click.echo(f"warning: and {len(problems) - 20} more damaged cells", err=True)


def render_table(results) -> str:
    head = ["seed", "status", "test_acc", "valid_acc", "train_loss", "params", "flops", "epochs", "seconds"]
    rows = [[str(r.seed), r.status, _fmt(r.test_acc, ".2f"), _fmt(r.valid_acc, ".2f"), _fmt(r.train_loss, ".4f"),
             human(r.params), human(r.flops), str(r.epochs), _fmt(r.seconds, ".1f")] for r in results]
    ok = [r for r in results if r.status == "ok" and r.test_acc is not None]
    if len(ok) > 1:
        def ms(vals):
            m = sum(vals) / len(vals)
            sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
            return f"{m:.2f}±{sd:.2f}"
        rows.append(["mean", f"{len(ok)} ok", ms([r.test_acc for r in ok]), ms([r.valid_acc for r in ok]),
                     _fmt(sum(r.train_loss for r in ok) / len(ok), ".4f"), "", "", "", ""])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    for r in results:
        if r.status != "ok":
            lines.append(f"seed {r.seed}: {r.status}: {r.error}")
    return "\n".join(lines)


@click.command("eval", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("arch", type=click.Path(exists=True, dir_okay=False, allow_dash=True), metavar="ARCH.nad")
@options(*EVAL_SETTINGS)
def eval_command(arch, dataset, data_dir, preset, seeds, executor, address, workers, run_dir, skeleton, fmt, epochs,
                 batch_size, chance_epochs, device, threads, compile_, trial_timeout, trials_per_gpu, max_memory, builder,
                 progress_mode, repair):
    """Train ARCH.nad on a dataset for each seed and report accuracy, parameters and FLOPs."""
    terminate_like_interrupt()
    try:
        code = _run(arch, dataset, data_dir, preset, seeds, executor, address, workers, run_dir, skeleton, fmt, epochs,
                    batch_size, chance_epochs, device, threads, compile_, trial_timeout, builder, trials_per_gpu, repair,
                    progress_mode, max_memory)
    except KeyboardInterrupt:
        click.echo("\ninterrupted; run again with the same --run-dir to resume", err=True)
        code = 130
    sys.exit(code)


def terminate_like_interrupt() -> None:
    """SIGTERM stops the evaluation the way Ctrl-C does: workers are stopped, finished epochs kept."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):  # pragma: no cover - not the main thread / unsupported platform
        pass


def over_memory_budget(text: str, name: str, skeleton: str, dataset: str, preset: str, options: dict,
                       max_memory=None, device=None, trials_per_gpu=None):
    """Why the compiler's network of `text` must not train (its training step over the memory budget,
    worded as `run` refuses it), or None; errors of the architecture itself are the jobs' to report."""
    from nader.compiler.errors import BuildError
    from nader.compiler.fit import FitError, over_memory, preset_budget
    from nader.compiler.network import analyze
    from nader.compiler.plan import resolve_depths
    from nader.compiler.skeletons import skeleton_info

    from .data import dataset_spec
    from .memory import default_memory_budget
    from .presets import resolve

    network_dataset = dataset_spec(dataset).network_dataset
    try:
        budget = preset_budget(skeleton, network_dataset, resolve_depths(skeleton_info(skeleton), None))
        budget = budget.with_memory(max_memory or default_memory_budget(device, trials_per_gpu or 1)[0],
                                    resolve(preset, options).batch_size)
        needed = analyze(text, skeleton, network_dataset, budget=dataclasses.replace(budget, memory=None),
                         path=name)["training_memory"]["total"]
    except (BuildError, FitError, ValueError):
        return None
    return over_memory(needed, budget) if needed > budget.memory else None


def _run(arch, dataset, data_dir, preset, seeds, executor, address, workers, run_dir, skeleton, fmt, epochs,
         batch_size, chance_epochs, device, threads, compile_, timeout, builder, trials_per_gpu=None,
         repair=False, progress_mode=None, max_memory=None) -> int:
    from .errors import ConfigError, DatasetError, RuntimeToolError
    from .faults import InfrastructureError
    from .integrity import StoreError

    debug = bool(os.environ.get("NADER_DEBUG"))
    tmp = lock = None
    fresh = created = False  # a run directory this call made, or one without a store yet
    try:
        if run_dir is not None:  # a search may be using it: refuse as a second `run` does, before importing torch
            from .lock import RunLock, RunLocked

            created = not Path(run_dir).exists()
            fresh = not (Path(run_dir) / "runs.sqlite").exists()
            try:
                Path(run_dir).mkdir(parents=True, exist_ok=True)
                lock = RunLock(run_dir).acquire()
            except RunLocked as exc:
                click.echo(f"error: {exc}", err=True)
                return 2
            except OSError as exc:  # worded as `run` words it
                click.echo(f"error: {describe_os_error(exc)}", err=True)
                return 2
        from nader.compiler.network import BUILDER  # the command line may name the compiler; the runtime does not

        from .data import canonical_name, check_dataset
        from .executors import make_executor
        from .jobs import Job
        from .presets import get_preset
        from .progress import Progress
        from .runner import evaluate

        try:  # a regular bounded UTF-8 file: `eval /dev/zero` must not read forever
            text = sys.stdin.read(ARCH_BYTES + 1) if arch == "-" else read_bounded_text(arch, "architecture",
                                                                                      max_bytes=ARCH_BYTES)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            return 2
        except OSError as exc:  # standard input
            click.echo(f"error: cannot read {arch}: {exc}", err=True)
            return 2
        if len(text) > ARCH_BYTES:
            click.echo(f"error: {arch}: the architecture is larger than {ARCH_BYTES:,} bytes", err=True)
            return 2
        name = "stdin" if arch == "-" else Path(arch).name
        ds = canonical_name(dataset)
        if data_dir is not None:
            data_dir = str(Path(data_dir).expanduser().resolve())
        if not (executor == "ray" and address):  # a cluster reads its own files
            try:
                check_dataset(ds, data_dir)
            except DatasetError as exc:
                click.echo(f"error: {exc}", err=True)
                return 2
        options = {}
        for k, v in (("epochs", epochs), ("batch_size", batch_size), ("chance_epochs", chance_epochs),
                     ("device", device), ("threads", threads), ("compile", compile_)):
            if v is not None:
                options[k] = v
        if builder is None:  # the compiler's network: refused over the memory budget as `run` refuses it
            problem = over_memory_budget(text, name, skeleton, ds, preset, options, max_memory, device, trials_per_gpu)
            if problem is not None:
                click.echo(f"error: {arch}: {problem}", err=True)
                return 2
        seed_list = seeds or list(get_preset(preset).seeds)
        jobs = [Job(arch=text, skeleton=skeleton, dataset=ds, preset=preset, seed=s, data_dir=data_dir,
                    builder=builder or BUILDER, options=dict(options), name=name) for s in seed_list]
        if run_dir is None:
            tmp = tempfile.mkdtemp(prefix="nader-run-")
            run_dir = tmp
        else:
            from .store import RunStore

            try:
                fresh = False  # from here on the run directory holds a store: it stays
                RunStore(run_dir).close()
            except StoreError as exc:
                return store_problem(exc, repair)
            except (OSError, sqlite3.Error) as exc:
                click.echo(f"error: cannot use the run directory {run_dir}: {exc}", err=True)
                return 2
            if repair and (code := repair_cells(run_dir)) is not None:
                return code
        progress = Progress(jobs, stream=sys.stderr, mode=progress_mode)
        ex = make_executor(executor, workers=workers, address=address, device=device, timeout=timeout,
                           trials_per_gpu=trials_per_gpu)
        try:
            results = evaluate(jobs, ex, run_dir=run_dir, on_result=progress.result, on_event=progress.event,
                               on_cached=progress.cached)
        finally:
            progress.close()
            ex.close()
        # The builder's notes (e.g. the skeleton's standard stem standing in for a missing one), once.
        for note in dict.fromkeys(n for r in results for n in (r.info or {}).get("notes", ())):
            click.echo(f"note: {note}", err=True)
        if fmt == "json":
            click.echo(json.dumps([r.summary() for r in results], indent=2))
        else:
            click.echo(render_table(results))
        return 0 if all(r.status == "ok" for r in results) else 1
    except (ConfigError, DatasetError, InfrastructureError, StoreError) as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except RuntimeToolError as exc:
        click.echo(f"error: {exc}", err=True)
        return 1
    except Exception as exc:  # never a traceback for the user
        if debug:
            traceback.print_exc()
        click.echo(f"internal error: {type(exc).__name__}: {exc} (set NADER_DEBUG=1 for details)", err=True)
        return 2
    finally:
        if lock is not None:  # refused before the store was made: no lock file, no folder left behind
            lock.release(remove=fresh)
            if fresh and created:
                try:
                    Path(run_dir).rmdir()
                except OSError:
                    pass
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
