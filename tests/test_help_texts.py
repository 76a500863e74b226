"""Help texts speak to a pip user: they name `nadc explain` topics or documentation pages by
title, never repository paths (docs/*.md, examples/, benchmarks/) that an installed copy lacks.
Every command and subcommand of `nadc` and `nader-search` is asked for its --help."""
from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from nader.cli import main as search_main
from nader.compiler.cli import cli as nadc_main

REPO_PATH = re.compile(r"\b(docs|examples|benchmarks|tests|scripts)/|\b[\w-]+\.md\b")


def _commands(group: click.Group, ctx: click.Context, path: tuple):
    yield path
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None:
            continue
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, click.Context(cmd, info_name=name, parent=ctx), (*path, name))
        else:
            yield (*path, name)


def _every_help():
    for prog, group in (("nadc", nadc_main), ("nader-search", search_main)):
        ctx = click.Context(group, info_name=prog)
        for path in _commands(group, ctx, ()):
            yield prog, group, path


HELPS = list(_every_help())


def test_the_scan_reaches_nested_commands():
    names = {(prog, path) for prog, _, path in HELPS}
    assert ("nadc", ("examples",)) in names and ("nader-search", ("run",)) in names
    assert any(prog == "nader-search" and len(path) == 2 for prog, path in names)  # kb, llm subcommands


@pytest.mark.parametrize("prog,group,path", HELPS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_help_names_no_repository_paths(prog, group, path):
    r = CliRunner().invoke(group, [*path, "--help"], prog_name=prog)
    assert r.exit_code == 0, r.output
    found = sorted({m.group(0) for m in REPO_PATH.finditer(r.output)})
    assert not found, f"`{prog} {' '.join(path)} --help` names repository paths {found}:\n{r.output}"
