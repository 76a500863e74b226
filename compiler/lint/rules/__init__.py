"""One lint rule per module; importing this package imports (and so registers) them all.

A rule module declares its code with `define_code` (documentation beside it:
what it does / why is this bad / example / fix) and registers its check with
`@rule(CODE)` from `nader.compiler.lint.engine`. New modules are found
automatically; `tests/test_lint.py` checks that each registers exactly one rule.
"""
from __future__ import annotations

import importlib
import pkgutil

MODULES: tuple[str, ...] = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))

for _name in MODULES:
    importlib.import_module(f"{__name__}.{_name}")
