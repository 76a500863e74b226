"""Strategies are listed lazily: each module in search/strategies/ defining a `Strategy` subclass
has its line in `LAZY_STRATEGIES`, and is then listed in `nader-search run --help` and in
docs/search.md."""
from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

from click.testing import CliRunner

import nader.search.strategies as strategies_package
from nader.search.strategies import LAZY_STRATEGIES, STRATEGIES, Strategy


def _defined_in_modules() -> dict:
    found = {}
    for info in pkgutil.iter_modules(strategies_package.__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"nader.search.strategies.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Strategy) and obj.__module__ == module.__name__:
                assert obj.name not in found, f"two strategies are named {obj.name!r}"
                found[obj.name] = f"{info.name}:{obj.__name__}"
    return found


def test_the_lazy_table_lists_every_strategy_module_defines():
    defined = _defined_in_modules()
    assert LAZY_STRATEGIES == defined, "search/strategies/__init__.py's LAZY_STRATEGIES differs from the modules"
    assert list(LAZY_STRATEGIES) == sorted(LAZY_STRATEGIES, key=lambda n: LAZY_STRATEGIES[n])  # module order


def test_every_strategy_module_contributes_its_strategies():
    assert {"random", "rea", "tree"} <= set(STRATEGIES)
    for name, cls in STRATEGIES.items():
        assert issubclass(cls, Strategy) and cls.name == name and cls.summary, name
        assert cls.__module__.rsplit(".", 1)[1] == LAZY_STRATEGIES[name].split(":")[0]


def test_listing_strategy_names_imports_no_strategy():
    code = ("import sys; from nader.search.strategies import STRATEGIES; "
            "assert 'nader' in STRATEGIES and 'nope' not in STRATEGIES; names = list(STRATEGIES); "
            "import nader.search.cli; "
            "print(sorted(m for m in sys.modules if m.startswith('nader.search.strategies.') "
            "and m.rsplit('.', 1)[1] not in ('base', 'llm')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_help_lists_every_strategy():
    from nader.search.cli import run_command

    out = CliRunner().invoke(run_command, ["--help"], terminal_width=200).output
    missing = [name for name in STRATEGIES if f"  {name}: " not in out]
    assert not missing, f"strategies missing from nader-search run --help: {missing}"


def test_each_built_in_strategy_takes_its_declaration_from_the_catalog():
    from nader.search.strategies.catalog import DECLARED

    assert list(DECLARED) == list(LAZY_STRATEGIES)
    for name, declared in DECLARED.items():
        cls = STRATEGIES[name]
        assert (cls.summary, cls.options) == tuple(declared), name
        assert cls.options is declared.options, f"{name} restates its options instead of taking DECLARED's"


def test_run_help_lists_the_strategies_without_importing_them():
    """Nor the search's configuration checks (search/config.py imports the compiler at its top)."""
    code = ("import sys; from click.testing import CliRunner; from nader.search.cli import run_command; "
            "out = CliRunner().invoke(run_command, ['--help'], terminal_width=200).output; "
            "assert '  nader: ' in out and '  optuna: ' in out, out; "
            "assert 'nader.search.config' not in sys.modules; "
            "print(sorted(m for m in sys.modules if m.startswith(('nader.search.strategies.', 'nader.agents.')) "
            "and m.rsplit('.', 1)[1] not in ('base', 'catalog', 'options', 'knowledge') "
            "and not m.startswith('nader.agents.llm')))")  # `--kb` is declared in nader.agents.knowledge.options
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_registered_strategy_is_listed_from_its_class():
    from nader.search.strategies.catalog import listing

    class Mine(Strategy):
        name = "mine-listed"
        summary = "a registered strategy"
        options = {}

    STRATEGIES["mine-listed"] = Mine
    try:
        assert ("mine-listed", "a registered strategy", {}) in listing(STRATEGIES)
        assert STRATEGIES.is_builtin("rea") and not STRATEGIES.is_builtin("mine-listed")
    finally:
        del STRATEGIES["mine-listed"]


def test_a_built_in_strategy_put_back_is_built_in_again(monkeypatch):
    """monkeypatch.setitem over a built-in name restores the class, not the lazy entry."""
    original = STRATEGIES["rea"]

    class Stand(Strategy):
        name = "rea"

    with monkeypatch.context() as patch:
        patch.setitem(STRATEGIES, "rea", Stand)
        assert not STRATEGIES.is_builtin("rea")
    assert STRATEGIES["rea"] is original and STRATEGIES.is_builtin("rea")
