"""`nadc fix --list FILE...`: every verified repair of each error, best first; nothing is written.

The repair `nadc fix` applies is the first of each list; the others are what a user may prefer
(narrow the layer that made a `2*C` operand rather than add a 1x1 `Conv2d`). Each alternative is
listed with its safety, kind, what it does, the nodes it adds, whether the block verifies once the
repair goes on from it, and its diff (`nader.compiler.repair.alternatives`). Safe and unsafe
alternatives are listed alike (`--unsafe` decides what `nadc fix` applies, not what it lists);
`[tool.nadc.fix] disable` still leaves kinds out. Exit status: 0 when no file has an error, else 1.
`fix_inputs` is how `nadc fix` and its `--list` open each FILE.
"""
from __future__ import annotations

import json

import click

from nader.dsl.limits import LimitsError, limits_for
from nader.dsl.block_files import read_block_file


def fix_inputs(path: str):
    """(name, limits, `[tool.nadc.fix]`, the file's source or None, its NAD100/NAD122 or None) of a FILE of
    `nadc fix` (and of `--list`); a configuration that cannot be used is a usage error."""
    from nader.compiler.repair.config import FixConfigError, fix_config_for

    name = "<stdin>" if path == "-" else path
    try:
        limits = limits_for(path)
        config = fix_config_for(path)
    except (LimitsError, FixConfigError) as error:
        raise click.UsageError(str(error)) from None
    source, unreadable = read_block_file(path, limits)
    return name, limits, config, source, unreadable


def list_cmd(files, fmt: str, options: dict) -> int:
    """`nadc fix --list`: print each file's alternatives; the exit status."""
    from nader.compiler.repair.alternatives import fix_alternatives

    records, errors = [], 0
    for path in files:
        name, limits, config, source, unreadable = fix_inputs(path)
        if unreadable is not None:
            errors += 1
            records.append({"file": name, "errors": [{**unreadable.to_json(), "alternatives": [], "searched": False}]})
            if fmt != "json":
                click.echo(f"{name}:1:1: error[{unreadable.code.code}] {unreadable.message}")
            continue
        found = fix_alternatives(source.text, unsafe=True, disabled=config.disabled, input_limits=limits, path=name,
                                 **options)
        errors += len(found)
        records.append({"file": name, "errors": [e.to_json() for e in found]})
        if fmt != "json":
            _print(name, found)
    if fmt == "json":
        click.echo(json.dumps(records, indent=2))
    else:
        click.echo(f"{errors} error{'s' if errors != 1 else ''} listed.", err=True)
    return 1 if errors else 0


def _print(name: str, found) -> None:
    for entry in found:
        d = entry.diagnostic
        click.echo(f"{name}:{d.span.line}:{d.span.col}: error[{d.code.code}] {d.message}")
        if entry.unsearched:
            click.echo(f"  not searched: {entry.unsearched}")
        elif not entry.alternatives:
            click.echo("  no verified repair")
        for k, a in enumerate(entry.alternatives, 1):
            then = "" if a.verifies is None else (" -> the block verifies" if a.verifies and not a.then else
                                                  f" -> the block verifies after {len(a.then)} more fix"
                                                  f"{'es' if len(a.then) != 1 else ''}" if a.verifies else
                                                  " -> the block still fails")
            added = f", {a.nodes_added:+d} node{'s' if abs(a.nodes_added) != 1 else ''}" if a.nodes_added else ""
            click.echo(f"  {k}. [{a.fix.safety}] {a.fix.kind}{added}: {a.fix.message}{then}")
            for line in a.diff.splitlines()[2:]:
                click.echo(f"       {line}")
