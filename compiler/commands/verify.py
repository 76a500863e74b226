"""`nadc verify`: structure and shape checks of every block, for every size of a domain."""
from __future__ import annotations

import gc
import json
import os

import click

from nader.compiler.commands.common import DOMAIN, FORMAT, ROLE, STEM_STRIDE, load, load_one
from nader.compiler.reporting import render_diagnostics
from nader.dsl.ir import Role
from nader.inputs.cli import options
from nader.inputs.settings import Flag, Integer, Setting

#: Fewest files a process gets: below that, a process spends more on reading lines another one
#: has read already (each has its own table of lines) than it saves.
FILES_PER_JOB = 25
#: Files a process takes from the queue at a time (see `_runs`).
FILES_PER_RUN = 8

@click.command("verify")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@options(ROLE, STEM_STRIDE, DOMAIN,
         Setting("--max-elements", Integer(1), "Largest tensor (elements per sample at C=64, H=W=32) a block may "
                                               "produce."),
         Setting("--shapes", Flag(), "Also print every node's inferred shape (JSON: a `shapes` object per block).",
                 name="with_shapes"),
         FORMAT,
         Setting("--no-fixes", Flag(), "Do not look for repairs (`nadc fix`) to attach to errors that carry no fix: "
                                       "faster over many failing files."),
         Setting("--jobs", Integer(1), "Processes for JSON output over many files; the output is the same for any "
                                       "number.", shown_default=f"one per core, at least {FILES_PER_JOB} files each"))
def verify_cmd(files, role, stem_stride, domain, max_elements, with_shapes, fmt, no_fixes, jobs):
    """Verify the blocks in FILEs: structure (NAD2xx) and shapes (NAD3xx) for every size of the domain.

    JSON output is a list with one object per block: file, block, role, domain, ok, diagnostics,
    constraints (conditions on the widths and sizes, e.g. `C % 4 == 0`, `H % 2 == 0`), for a stem
    stem_stride (the stride the verdict holds for) and, with --shapes, shapes (live node id ->
    shape). Problems of a whole file (unreadable, no block, duplicate block names) come as an
    object whose block is null.
    Exit status 1 when any block has an error.
    """
    # Parsing and verifying create no reference cycles, so the cyclic collector would only rescan
    # the growing IR again and again (a quarter of the run over 1,000 files).
    collecting = gc.isenabled()
    gc.disable()
    try:
        role = Role(role) if role else None
        checks = (role, stem_stride, domain, _limits(max_elements), not no_fixes)
        if fmt == "json":
            failed = _verify_json(files, checks, with_shapes, jobs)
        else:
            failed = _verify(files, checks, with_shapes, fmt)
    finally:
        if collecting:
            gc.enable()
    raise SystemExit(1 if failed else 0)


def _limits(max_elements):
    from nader.compiler.passes import Limits

    return Limits(max_elements=max_elements) if max_elements else Limits()


def _file_object(parsed, file_level, domain, with_shapes) -> dict:
    """The JSON object of a file with nothing to verify (unreadable, empty, no parsable block) or with
    problems of the whole file."""
    obj = {"file": parsed.program.path, "block": None, "role": None, "domain": str(domain),
           "ok": not any(d.is_error for d in file_level),  # as the exit status: warnings leave it true
           "diagnostics": [d.to_json() for d in file_level], "constraints": []}
    if with_shapes:
        obj["shapes"] = {}
    return obj


def _verify_json(files, checks, with_shapes, jobs) -> bool:
    """Print the JSON report; whether any block or file has an error.

    Over many files, worker processes take short runs of them in turn and their JSON pieces are
    joined in file order: the same bytes as one process writes.
    """
    processes = jobs or max(1, min(_cores(), len(files) // FILES_PER_JOB))
    if "-" in files or not hasattr(os, "fork"):
        processes = 1  # standard input is the parent's; workers are forked
    work = [(files[start:start + size], checks, with_shapes) for start, size in _runs(len(files), processes)]
    if processes > 1:
        from .forked import map_forked

        pieces = map_forked(_json_piece, work, processes)
    else:
        pieces = [_json_piece(w) for w in work]
    click.echo("[" + ",".join(text for text, _ in pieces if text) + "]")
    return any(failed for _, failed in pieces)


def _cores() -> int:
    """The cores this process may run on. Not fewer when the machine is busy: the scheduler shares
    a core between runnable tasks, so each extra worker still adds to this run's share (measured
    with one core taken by another job: two workers 0.74-0.77 s, one 0.82-0.88 s)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _runs(count: int, processes: int) -> list[tuple[int, int]]:
    """(start, size) of the contiguous runs of files the processes take in turn, in order.

    One run for a single process; else runs of about FILES_PER_RUN files, short enough that the
    processes finish within a run of each other (files differ in cost), long enough that each
    process reads lines its earlier files share with these.
    """
    if processes == 1 or count == 0:
        return [(0, count)]
    from .forked import MAX_ITEMS

    size = max(FILES_PER_RUN, -(-count // MAX_ITEMS))
    return [(start, min(size, count - start)) for start in range(0, count, size)]


def _verify_file(parsed, checks):
    from nader.compiler.passes import verify_program

    role, stem_stride, domain, limits, fixes = checks
    reports, file_level = verify_program(parsed, role=role, stem_stride=stem_stride, limits=limits, domain=domain)
    if fixes and not all(report.ok for report in reports):
        from nader.compiler.repair.suggest import suggest_fixes  # only for files with errors

        suggest_fixes(parsed.source, reports, file_level, role=role, stem_stride=stem_stride, limits=limits, domain=domain,
                      path=parsed.program.path, input_limits=parsed.limits)
    return reports, file_level


def _json_piece(work) -> tuple[str, bool]:
    """The JSON objects of some files (compact, without the list's brackets), and whether any failed."""
    files, checks, with_shapes = work
    objects, failed = [], False
    for path in files:
        parsed = load_one(path)  # file by file: memory stays constant over many files
        reports, file_level = _verify_file(parsed, checks)
        if not parsed.program.blocks or file_level:
            objects.append(_file_object(parsed, file_level, checks[2], with_shapes))
        failed |= any(d.is_error for d in file_level)
        for report in reports:
            obj = report.to_json(shapes=with_shapes)
            failed |= not obj["ok"]
            objects.append(obj)
    return json.dumps(objects, separators=(",", ":"))[1:-1], failed  # compact: the C encoder, several times faster


def _verify(files, checks, with_shapes, fmt) -> bool:
    """Print the report for people; whether any block or file has an error."""
    from nader.compiler.passes.shapes import shape_str

    results = load(files)
    diagnostics, summary = [], []
    failed = False
    for parsed in results:
        reports, file_level = _verify_file(parsed, checks)
        diagnostics.extend(file_level)
        failed |= any(d.is_error for d in file_level)
        for report in reports:
            diagnostics.extend(report.diagnostics)
            failed |= not report.ok
            constraints = f"; constraints: {', '.join(report.constraints)}" if report.constraints else ""
            verdict = "ok" if report.ok else "error"
            role = f"{report.role}, stride {report.stem_stride}" if report.stem_stride is not None else report.role
            summary.append(f"{report.file}:{report.block.span.line}: {report.block.name} ({role}): {verdict}{constraints}")
            if with_shapes and report.shapes is not None:
                summary.extend(f"  {node_id}: {shape_str(shape)}" for node_id, shape in report.shapes.shapes.items())
    text = render_diagnostics(diagnostics, fmt, {r.program.path: r.source for r in results})
    if text:
        click.echo(text, nl=False)
    click.echo("\n".join(summary))
    return failed
