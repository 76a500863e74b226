"""`nadc fix FILE... [--unsafe] [--diff] [--check]`: repair blocks in place, shaped like `ruff check --fix`.

Safe fixes (meaning kept) always apply; unsafe ones (the architecture changes, minimally) with
`--unsafe` or `unsafe = true` in `[tool.nadc.fix]`. Fixes apply until nothing changes, each
only where the block then verifies better (`nader.compiler.repair`). The files are rewritten
in place; `--diff` prints unified diffs instead, `--check` lists what would change. A block that
the fixes found do not make verify is left as it was, unless `--partial`; `--list` prints every
verified repair of each error instead (compiler/commands/fix_list.py). The errors
left are printed as diagnostics, then a summary. Exit status: 0 when no error remains (and, with
`--diff` or `--check`, nothing would change), 1 otherwise, 2 on a usage or internal error.
"""
from __future__ import annotations

import json

import click

from nader.compiler.commands.common import DOMAIN, FORMAT, ROLE, STEM_STRIDE
from nader.compiler.commands.fix_list import fix_inputs, list_cmd
from nader.compiler.reporting import render_diagnostics
from nader.dsl.ir import Role
from nader.inputs.cli import options as setting_options
from nader.inputs.settings import Flag, Integer, Setting
from nader.inputs.writes import WriteRefused, write_file

#: `--max-rounds`' default: each round is one `repair_text`, bounded by its own budget
MAX_ROUNDS = 8


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{('es' if word.endswith('x') else 's') if count != 1 else ''}"


def _stdin_result(record: dict, text: str, fmt: str) -> None:
    """Standard input's repaired text: on stdout, or as the record's `text` in JSON."""
    if fmt == "json":
        record["text"] = text
    else:
        click.echo(text, nl=False)


def repair_rounds(text: str, rounds: int, **options):
    """`repair_text` again on its own result until a round changes nothing (a fixed point: `nadc fix`
    run again changes nothing either) or `rounds` rounds ran; (the result from `text`, the rounds
    run, why it stopped short: None, `rounds`, or the last round's `stopped`: budget, errors)."""
    from nader.compiler.repair import RepairResult, repair_text

    partial = options.pop("partial", False)
    applied, current, done, result = [], text, 0, None
    while done < rounds:  # rounds build on each other's partial results; the whole is judged at the end
        result = repair_text(current, partial=True, **options)
        done += 1
        applied += result.applied
        if not result.changed:
            break
        current = result.text
    stopped = "rounds" if result.changed else result.stopped
    if result.remaining and not partial:  # a block the rounds cannot make verify stays as it was
        judged = repair_text(text, partial=False, **options)
        if judged.left:
            return RepairResult(text, judged.text, judged.applied, judged.remaining, left=judged.left,
                                stopped=stopped), done, stopped
    return RepairResult(text, result.text, tuple(applied), result.remaining, left=result.left,
                        stopped=stopped), done, stopped


def stop_note(stopped: str, rounds: int, remaining: int) -> str:
    """Why `nadc fix` stopped before a fixed point, and what to do (text and JSON's `note`)."""
    left = _plural(remaining, "error")
    if stopped == "rounds":
        return (f"stopped after {_plural(rounds, 'round')} with {left} left that more rounds may fix; "
                f"run `nadc fix` again or raise --max-rounds")
    if stopped == "errors":
        return f"not repaired: {left}, too many to repair; fix the first ones by hand and run `nadc fix` again"
    return (f"stopped early: the repair's budget of verifications ran out with {left} left (a large or badly "
            f"damaged file); fix the first ones by hand and run `nadc fix` again")


def _errors_of(text: str, name: str, limits, options: dict) -> list:
    """The errors of `text` as it is (a file left unwritten keeps them)."""
    from nader.compiler.passes.verify import verify_program
    from nader.dsl.diagnostics import sort_key
    from nader.dsl.parser import parse

    reports, file_level = verify_program(parse(text, name, limits), **options)
    return sorted((d for d in [*file_level, *(d for r in reports for d in r.diagnostics)] if d.is_error), key=sort_key)


@click.command("fix")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@setting_options(Setting("--unsafe", Flag(), "Also apply unsafe fixes: they change the architecture, minimally."),
         Setting("--diff", Flag(), "Print the changes as unified diffs instead of writing them.", name="show_diff"),
         Setting("--check", Flag(), "Write nothing; list the files that would change and exit 1 if any."),
         ROLE, STEM_STRIDE.but(help="Stride of stems.", shown_default="the stride each stem has, as `nadc verify`"),
         DOMAIN.but(help="Input sizes the repaired blocks must verify for (as `nadc verify --domain`)."),
         Setting("--max-rounds", Integer(1, 100), "Repair the result again until nothing changes, at most this many "
                 "times (each round has its own budget); a file that would still change gets a note.",
                 default=MAX_ROUNDS),
         Setting("--partial", Flag(), "Apply the fixes found for a block even where they do not make it verify (by "
                 "default such a block is left as it was, and a note says so)."),
         Setting("--list", Flag(), "Write nothing; list every verified repair of each error (safety, what it does, "
                 "its diff, whether the block then verifies), best first.", name="list_fixes"),
         FORMAT.but(help="How to print what remains (`json`: one object per file on stdout)."))
def fix_cmd(files, unsafe, show_diff, check, role, stem_stride, domain, max_rounds, partial, list_fixes, fmt):
    """Fix the errors of FILEs in place: safe fixes, and unsafe ones with --unsafe (`-` reads standard
    input and prints the result; in JSON, as the record's `text`).

    \b
    nadc fix block.nad              apply safe fixes
    nadc fix --unsafe blocks/*.nad  also unsafe ones (merge inputs with Add, 1x1 Conv2d, ...)
    nadc fix --diff block.nad       print what would change
    nadc fix --check blocks/*.nad   exit 1 if anything would change
    nadc fix --list block.nad       every verified repair of each error, best first
    `nadc explain fixes` lists the fix kinds; `[tool.nadc.fix] disable = [...]` turns kinds off.
    """
    from nader.compiler.repair import repair_text

    if show_diff and check:
        raise click.UsageError("--diff and --check exclude each other")
    options = {"role": Role(role) if role else None, "stem_stride": stem_stride, "domain": domain}
    if list_fixes:
        raise SystemExit(list_cmd(files, fmt, options))
    records, remaining, sources = [], [], {}
    fixed = would_change = failed = 0
    more_with_unsafe = 0
    for path in files:
        name, limits, config, source, unreadable = fix_inputs(path)
        if unreadable is not None:
            remaining.append(unreadable)
            records.append({"file": name, "changed": False, "ok": False, "applied": [],
                            "remaining": [unreadable.to_json()]})
            continue
        text = source.text
        result, rounds, stopped = repair_rounds(text, max_rounds, unsafe=unsafe or config.unsafe, partial=partial,
                                                disabled=config.disabled, input_limits=limits, path=name, **options)
        if not (unsafe or config.unsafe) and result.remaining:
            more_with_unsafe += len(repair_text(result.text, unsafe=True, disabled=config.disabled,
                                                input_limits=limits, path=name, **options).applied)
        record = {"file": name, **result.to_json(), "rounds": rounds, "stopped": stopped}
        if stopped:
            record["note"] = stop_note(stopped, rounds, len(result.remaining))
        if result.changed and not (show_diff or check) and path != "-":
            try:
                write_file(path, source.encode(result.text), what="block file")
            except WriteRefused as error:  # nothing changed: the file's own errors remain, no fix is counted
                click.echo(f"error: {error}", err=True)
                failed += 1
                left = _errors_of(text, name, limits, options)
                remaining.extend(left)
                sources[name] = text
                records.append({"file": name, "changed": False, "ok": not left, "applied": [],
                                "remaining": [d.to_json() for d in left], "error": str(error)})
                continue
        sources[name] = result.text
        remaining.extend(result.remaining)
        fixed += len(result.applied)
        if result.changed:
            would_change += 1
            if show_diff or check:
                record["diff"] = result.diff(name)
            elif path == "-":
                _stdin_result(record, source.render(result.text), fmt)
        elif path == "-" and not (show_diff or check):
            _stdin_result(record, source.render(result.text), fmt)
        records.append(record)
        if fmt != "json":
            verb = "would fix" if (show_diff or check) else "fixed"
            for f in result.applied:
                click.echo(f"{name}: {verb} {f.code} ({f.kind}, {f.safety}): {f.message}", err=True)
            for block in result.left:
                click.echo(f"note: {name}: {block.message()}", err=True)
            if stopped:
                click.echo(f"note: {name}: {record['note']}", err=True)
            if show_diff and result.changed:
                click.echo(result.diff(name), nl=False)
            if check and result.changed:
                click.echo(f"Would fix: {name}")
    if fmt == "json":
        click.echo(json.dumps(records, indent=2))
    else:
        if remaining:
            click.echo(render_diagnostics(remaining, fmt, sources), err=True, nl=False)
        errors = sum(d.is_error for d in remaining)
        verb = "Would apply" if (show_diff or check) else "Applied"
        summary = (f"{verb} {_plural(fixed, 'fix')} in {_plural(would_change, 'file')}; "
                   f"{_plural(errors, 'error')} remain{'s' if errors == 1 else ''}")
        if more_with_unsafe:
            summary += f" ({more_with_unsafe} more fixable with --unsafe)"
        if failed:
            summary += f"; {_plural(failed, 'file')} could not be written and {'is' if failed == 1 else 'are'} unchanged"
        click.echo(summary + ".", err=True)
    problems = any(d.is_error for d in remaining) or failed or ((show_diff or check) and would_change)
    raise SystemExit(1 if problems else 0)
