"""Each setting declared once (`nader.inputs.settings.Setting`): the click options of every command
are made from settings (none written inline), and a flag, a search.toml key and a `create_study`
keyword that mean the same are one setting, refused alike for the same reason."""
from __future__ import annotations

import ast
import dataclasses
import re

import click
import pytest
from click.testing import CliRunner

from conftest import REPO_ROOT
from nader.cli import main as search_main
from nader.compiler.cli import cli as nadc_main
from nader.inputs.cli import SettingOption
from nader.runtime.errors import ConfigError

#: the one module that makes click options (from settings)
GENERATOR = "inputs/cli.py"
#: Option declarations allowed elsewhere, "path:function" -> why. Every option that takes a value
#: or switches something a command does is a setting.
INLINE_OPTIONS: dict[str, str] = {
    "compiler/cli.py:version_option": "click's own --version of the nadc group, as --help: it reads no value",
    "nader/cli.py:version_option": "click's own --version of the nader-search group, as --help: it reads no value",
}
#: click's decorators and classes that declare an option
DECLARERS = ("option", "Option", "version_option", "help_option", "password_option", "confirmation_option")
FOLDERS = ("inputs", "dsl", "runtime", "compiler", "agents", "search", "nader")


def _inline_options() -> list[str]:
    """Every call declaring a click option (`click.option(...)`, `click.Option(...)`,
    `click.version_option(...)`, ..., or one of them imported from click) in the package's source, as
    "path:function"."""
    sites = []
    for folder in FOLDERS:
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            aliases = {a.asname or a.name: a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                       and (n.module or "").startswith("click") for a in n.names if a.name in DECLARERS}
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in DECLARERS and isinstance(func.value, ast.Name) \
                        and func.value.id == "click":
                    sites.append(f"{path.relative_to(REPO_ROOT)}:{func.attr}")
                elif isinstance(func, ast.Name) and func.id in aliases:
                    sites.append(f"{path.relative_to(REPO_ROOT)}:{aliases[func.id]}")
    return sites


def test_no_option_is_written_inline():
    """A new flag is a `Setting` in a table (or beside its command) and `options(...)` makes it; a
    `click.option` written anywhere else fails here unless listed in INLINE_OPTIONS with its reason."""
    sites = _inline_options()
    assert any(site.startswith(GENERATOR) for site in sites), "the scan found not even the generator's options"
    inline = [site for site in sites if not site.startswith(GENERATOR)]
    for listed in INLINE_OPTIONS:  # each listed declaration allows one
        if listed in inline:
            inline.remove(listed)
    assert not inline, f"click options written inline (declare a Setting and use nader.inputs.cli.options): {inline}"
    stale = set(INLINE_OPTIONS) - set(sites)  # a listed one that went away: drop it from the list
    assert not stale, f"INLINE_OPTIONS lists options that are gone: {sorted(stale)}"


def _commands(group: click.Group, ctx: click.Context, path: tuple):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from _commands(command, click.Context(command, info_name=name, parent=ctx), (*path, name))
        elif command is not None:
            yield (*path, name), command


def _every_command():
    for prog, group in (("nadc", nadc_main), ("nader-search", search_main)):
        yield from (((prog, *path), command) for path, command in _commands(group, click.Context(group), ()))


def test_every_option_of_every_command_is_made_from_a_setting():
    """nadc's commands, nader-search's (run, eval, report, status, best, export, read, kb, llm,
    bench-nad): each option but --help carries the setting it was made from."""
    commands = dict(_every_command())
    assert {("nadc", "verify"), ("nadc", "fix"), ("nader-search", "run"), ("nader-search", "eval"),
            ("nader-search", "kb", "search"), ("nader-search", "llm", "check"), ("nader-search", "bench-nad"),
            ("nader-search", "report")} <= set(commands)
    loose = [(" ".join(path), param.opts) for path, command in commands.items() for param in command.params
             if isinstance(param, click.Option) and param.name != "help" and not isinstance(param, SettingOption)]
    assert not loose, f"options not made from a setting: {loose}"


# -- one setting, one reader: the flag, the TOML key and the keyword refuse alike ---------------------
EXAMPLE = REPO_ROOT / "examples" / "resnet_basic.nad"
REFUSED = [  # (flag, its text, TOML line, keyword, Python value)
    ("--max-params", "nan", "max-params = nan", "max_params", float("nan")),
    ("--max-params", "abc", 'max-params = "abc"', "max_params", "abc"),
    ("--trials", "0", "trials = 0", "trials", 0),
    ("--seeds", "7,x", 'seeds = "7,x"', "seeds", "7,x"),
    ("--time-limit", "inf", "time-limit = inf", "time_limit", float("inf")),
    ("--max-memory", "-5", "max-memory = -5", "max_memory", -5),
    ("--dataset", "mnist", 'dataset = "mnist"', "dataset", "mnist"),
]


@pytest.mark.parametrize("flag, text, line, keyword, value", REFUSED, ids=[r[0] + "=" + r[1] for r in REFUSED])
def test_a_flag_its_toml_key_and_its_keyword_refuse_a_value_for_the_same_reason(tmp_path, flag, text, line, keyword,
                                                                                 value):
    import nader.search as ns
    from nader.search.config_file import read_toml

    result = CliRunner().invoke(search_main, ["run", "--from", str(EXAMPLE), flag, text,
                                              "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2
    cli = re.search(rf"Invalid value for '{flag}': (.*)", " ".join(result.output.split())).group(1)
    toml = tmp_path / "search.toml"
    toml.write_text(line + "\n")
    with pytest.raises(ConfigError) as from_file:
        read_toml(toml)
    assert str(from_file.value) == f"{toml}: {flag[2:]}: {cli}"
    with pytest.raises(ConfigError) as from_python:
        ns.create_study(storage=str(tmp_path / "study"), **{keyword: value})
    assert str(from_python.value) == f"{keyword}: {cli}"
    assert not (tmp_path / "run").exists() and not (tmp_path / "study").exists()


def test_the_api_takes_what_the_flag_takes(tmp_path):
    import nader.search as ns

    study = ns.create_study(storage=str(tmp_path), space="nb201", max_params="1.5M", seeds="7, 8", max_memory="6G",
                            time_limit="10m", dataset="CIFAR10")
    assert {k: study.settings[k] for k in ("max_params", "seeds", "max_memory", "time_limit", "dataset")} == \
        {"max_params": 1_500_000, "seeds": [7, 8], "max_memory": 6 << 30, "time_limit": 600.0, "dataset": "cifar10"}
    with pytest.raises(ConfigError, match="unknown setting run_dir; known: .*storage"):
        ns.create_study(storage=str(tmp_path), run_dir="elsewhere")


def test_each_toml_key_and_keyword_names_one_setting():
    from nader.search.settings import SEARCH_SETTINGS

    keys = [k for s in SEARCH_SETTINGS for k in ((s.toml,) if s.toml else ()) + s.old_toml]
    keywords = [s.keyword for s in SEARCH_SETTINGS if s.keyword]
    assert len(keys) == len(set(keys)) and len(keywords) == len(set(keywords))
    flags = [f for s in SEARCH_SETTINGS for f in s.spellings + s.old]
    assert len(flags) == len(set(flags))


def test_the_search_configs_defaults_are_the_tables():
    """`SearchConfig`'s dataclass defaults and the settings' (what --help and the docs show) agree."""
    from nader.search.config import SearchConfig
    from nader.search.settings import SEARCH_SETTINGS

    by_field = {s.field: s for s in SEARCH_SETTINGS}
    for f in dataclasses.fields(SearchConfig):
        assert f.name in by_field, f"SearchConfig.{f.name} has no setting (search/settings.py)"
        if f.default is not dataclasses.MISSING and f.default is not None:
            assert by_field[f.name].default == f.default, f.name


# -- one list parser -------------------------------------------------------------------------------
def test_one_list_parser_reads_seeds_depths_and_widths_alike(tmp_path):
    from nader.inputs import InputError
    from nader.inputs.settings import int_list
    from nader.search.config_file import read_toml

    assert int_list(" 777, 888 ,999", "seeds") == [777, 888, 999] == int_list([777, 888, 999], "seeds")
    with pytest.raises(InputError, match="seeds: expected comma-separated integers such as 1,2,3, got '7,x'"):
        int_list("7,x", "seeds")
    toml = tmp_path / "s.toml"
    toml.write_text('seeds = "1, 2"\ndepths = [1, 1, 1]\n')
    assert read_toml(toml) == {"seeds": [1, 2], "depths": [1, 1, 1]}
    for argv in (["eval", str(EXAMPLE), "--seeds", "7,x"], ["run", "--from", str(EXAMPLE), "--seeds", "7,x"]):
        result = CliRunner().invoke(search_main, argv)
        assert result.exit_code == 2 and "expected comma-separated integers such as 777,888,999, got '7,x'" in \
            " ".join(result.output.split())
    result = CliRunner().invoke(nadc_main, ["cost", str(EXAMPLE), "--widths", "16,0"])
    assert result.exit_code == 2 and "--widths': 0 is below the least allowed, 1" in result.output
