"""One mutation operator per module; importing this package finds them all.

A module here defines one `MutationOperator` subclass (with its `name`, texts and `draw_order`);
`OPERATORS` in `nader.compiler.mutate.table` collects them, so a new operator is a new file and
nothing else: `nadc explain`, docs/mutations.md's generated table and the tests pick it up.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..base import MutationOperator

MODULES: tuple[str, ...] = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))


def _defined_in(module) -> list[type[MutationOperator]]:
    return [obj for obj in vars(module).values() if isinstance(obj, type) and issubclass(obj, MutationOperator)
            and obj.__module__ == module.__name__]


#: module name -> the operator classes it defines (one each; tests/test_mutate.py checks it).
CLASSES: dict[str, list[type[MutationOperator]]] = {
    name: _defined_in(importlib.import_module(f"{__name__}.{name}")) for name in MODULES}
