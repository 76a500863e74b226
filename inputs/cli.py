"""The click options of settings (`nader.inputs.settings`): the only place a command line's option
is made. Every command decorates itself with `options(...)` of its settings, so its flags read
their values with the same reader as a search.toml key or an API keyword, and `--help` shows what
the setting declares.

A command line module (it imports click), usable by every command line of the project.
`tests/test_settings.py` counts `click.option` calls elsewhere: there are none.
"""
from __future__ import annotations

import functools

import click

from .errors import InputError
from .settings import Choice, Pairs, Setting


def renamed_warning(old: str, new: str) -> str:
    return f"warning: {old} is now {new}; the old name goes in the next release"


def old_dest(old: str) -> str:
    """The keyword an old spelling of a flag arrives as, before it is renamed."""
    return "old_" + old.lstrip("-").replace("-", "_")


class SettingType(click.ParamType):
    """A click parameter type that reads a value with its setting's kind: the reason for a refusal
    is the one a TOML file or the API gets."""

    def __init__(self, setting: Setting):
        self.setting = setting
        self.name = setting.kind.metavar.strip("[]").lower()
        if setting.kind.choices:  # as click.Choice has them, for whoever reads a command's choices
            self.choices = setting.kind.choices

    def get_metavar(self, param, ctx=None):
        return self.setting.kind.metavar

    def convert(self, value, param, ctx):
        setting = self.setting
        what = param.opts[0] if param is not None and param.opts else setting.long or setting.name
        kind = setting.kind
        if isinstance(kind, Choice) and isinstance(value, str) and value.strip().lower() in kind.aliases:
            click.echo(renamed_warning(f"{what} {value}", f"{what} {kind.aliases[value.strip().lower()]}"), err=True)
        try:
            return setting.read(value, what)
        except InputError as exc:
            self.fail(str(exc).removeprefix(f"{what}: "), param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        kind = self.setting.kind
        if kind.choices:
            return [CompletionItem(c) for c in kind.choices if c.startswith(incomplete)]
        if kind.path:
            return [CompletionItem(incomplete, type="dir" if kind.path == "dir" else "file")]
        return []


class SettingOption(click.Option):
    """A click option made from a setting, which it keeps (`setting`): tests/test_settings.py
    finds every option of every command this way."""

    def __init__(self, *args, setting: Setting, **kwargs):
        super().__init__(*args, **kwargs)
        self.setting = setting


def help_text(setting: Setting, layered: bool = False) -> str:
    """The setting's help, with its default where click would not show it (a computed default;
    every default of a layered command, whose flags arrive as None when not given)."""
    extra = []
    shown = setting.shown()
    if shown is not None and (layered or setting.shown_default is not None):
        extra.append(f"default: {shown}")
    if setting.kind.bounds and not setting.is_flag:
        extra.append(setting.kind.bounds)
    return f"{setting.help}  [{'; '.join(extra)}]".strip() if extra else setting.help


def _merge(ctx, param, values):
    """A repeated KEY=VALUE option: one dict (None when not given)."""
    out = {}
    for value in values or ():
        out.update(value)
    return out or None


def option(setting: Setting, layered: bool = False):
    """The click option of one setting (and hidden options for its old spellings). `layered`:
    the command merges flags over a file's and a stored run's settings, so a flag not given
    arrives as None (not the default, which the library fills in)."""
    s = setting
    kwargs = dict(help=help_text(s, layered), hidden=s.hidden, required=s.required, envvar=s.envvar,
                  metavar=s.metavar)
    if s.is_flag:
        paired = "/" in (s.long or "")
        kwargs.update(is_flag=True, default=s.default if s.default is not None else (None if paired else False))
        del kwargs["metavar"]
    else:
        kwargs.update(type=SettingType(s), default=None if layered else s.default, multiple=s.multiple)
        if s.flag_value is not None:
            kwargs.update(is_flag=False, flag_value=s.flag_value)
        if not layered and s.default is not None and s.shown_default is None:
            kwargs["show_default"] = True
        if s.multiple and isinstance(s.kind, Pairs):
            kwargs["callback"] = _merge
    decorators = [click.option(*s.spellings, s.name, cls=SettingOption, setting=s, **kwargs)]
    for old in s.old:
        decorators.append(click.option(old, old_dest(old), cls=SettingOption, setting=s, type=kwargs.get("type"),
                                       hidden=True, is_flag=s.is_flag or None))
    return decorators


def _renaming(command, settings):
    """The command, taking a value given under an old spelling as its setting's (with a warning);
    both spellings at once is a usage error."""

    @functools.wraps(command)
    def renamed(*args, **kwargs):
        for s in settings:
            for old in s.old:
                value = kwargs.pop(old_dest(old), None)
                if value is None or value is False:
                    continue
                if kwargs.get(s.name) not in (None, False):
                    raise click.UsageError(f"{old} is the old name of {s.long}: give {s.long} alone")
                click.echo(renamed_warning(old, s.long), err=True)
                kwargs[s.name] = value
        return command(*args, **kwargs)
    return renamed


def options(*settings: Setting, layered: bool = False):
    """Decorate a click command with the options of `settings`, listed in this order by --help."""

    def decorate(command):
        renamed = [s for s in settings if s.old]
        if renamed:
            command = _renaming(command, renamed)
        for s in reversed(settings):
            for decorator in reversed(option(s, layered)):
                command = decorator(command)
        return command
    return decorate


def given(settings, values: dict) -> dict:
    """{field: value} of the settings given on the command line (not None), from the keyword
    arguments a command received."""
    out = {}
    for s in settings:
        value = values.get(s.name)
        if value is not None:
            out[s.field] = value
    return out
