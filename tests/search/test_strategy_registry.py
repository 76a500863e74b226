"""Strategies are discovered: a module in search/strategies/ defining a `Strategy` subclass is
registered, listed in `nader-search run --help` and in docs/search.md without editing a list."""
from __future__ import annotations

from click.testing import CliRunner

from nader.search.strategies import MODULES, STRATEGIES, Strategy


def test_every_strategy_module_contributes_its_strategies():
    assert {"random", "rea", "tree"} <= set(STRATEGIES)
    for name, cls in STRATEGIES.items():
        assert issubclass(cls, Strategy) and cls.name == name and cls.summary, name
        assert cls.__module__.rsplit(".", 1)[1] in MODULES
    assert "base" not in MODULES


def test_help_lists_every_strategy():
    from nader.search.cli import run_command

    out = CliRunner().invoke(run_command, ["--help"], terminal_width=200).output
    missing = [name for name in STRATEGIES if f"  {name}: " not in out]
    assert not missing, f"strategies missing from nader-search run --help: {missing}"
