"""docs/llm.md's flag table against the commands themselves: every command of `nader-search`
that takes an LLM flag takes all of them, with the names, `[llm]` keys and hidden old spellings
the table gives."""
from __future__ import annotations

import re

import click

from conftest import REPO_ROOT
from nader.agents.llm.options import LLM_SETTINGS


def _table() -> dict:
    text = (REPO_ROOT / "docs/llm.md").read_text(encoding="utf-8")
    section = text.split("### Flags", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `--"):
            rows[cells[0].strip("`")] = (cells[1].strip("`"), frozenset(re.findall(r"`(--[a-z-]+)`", cells[2])))
    return rows


def _commands(command, path=()):
    if isinstance(command, click.Group):  # nader-search's group loads its commands lazily
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from _commands(command.get_command(ctx, name), (*path, name))
    else:
        yield " ".join(path), command


def _llm_flags(command) -> tuple[dict, set]:
    """(visible flag -> its parameter name, hidden spellings) of a command's LLM options."""
    visible, hidden = {}, set()
    for param in command.params:
        for spelling in param.opts:
            if spelling.startswith(("--llm-", "--embedding-model", "--replay")):
                visible[spelling] = param.name
            elif getattr(param, "hidden", False) and param.name.startswith("old_"):
                hidden.add(spelling)
    return visible, hidden


def test_every_llm_command_takes_the_documented_flags():
    from nader.cli import main

    table = _table()
    assert "--llm-base-url" in table and len(table) >= 10  # the parser found the table at all
    documented_old = set().union(*(old for _, old in table.values()))
    llm_commands = {}
    for path, command in _commands(main):
        visible, hidden = _llm_flags(command)
        if visible:
            llm_commands[path] = (visible, hidden)
    assert {"run", "read", "kb import", "kb search", "bench-nad"} <= set(llm_commands)
    for path, (visible, hidden) in llm_commands.items():
        assert set(visible) == set(table), (path, set(visible) ^ set(table))
        assert hidden == documented_old, (path, hidden ^ documented_old)
        help_text = command_help(path)
        assert all(flag in help_text for flag in table), path


def command_help(path: str) -> str:
    from click.testing import CliRunner

    from nader.cli import main

    result = CliRunner().invoke(main, [*path.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_table_gives_each_flag_its_key_and_old_spellings():
    declared = {s.long: ("" if s.field in ("config_path", "replay") else s.field, frozenset(s.old))
                for s in LLM_SETTINGS}
    assert _table() == declared
