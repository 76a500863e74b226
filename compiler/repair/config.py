"""Which fix kinds `nadc fix` may use: `[tool.nadc.fix]` in pyproject.toml.

```toml
[tool.nadc.fix]
disable = ["drop-argument", "merge-inputs-concat"]   # fix kinds (`nadc explain fixes` lists them)
unsafe = true                                          # as if `--unsafe` were given
```

The table is the nearest pyproject.toml holding one, in the file's folder or above (standard
input: the working directory), read through `nader.dsl.pyproject` like `[tool.nadc.lint]`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from nader.dsl.pyproject import PyprojectError, nadc_table

from .kinds import all_kinds


class FixConfigError(ValueError):
    """A `[tool.nadc.fix]` table that cannot be used; the message names the file."""


@dataclass(frozen=True)
class FixConfig:
    disabled: frozenset[str] = frozenset()
    unsafe: bool = False
    source: Optional[str] = None


@lru_cache(maxsize=256)
def _read(pyproject: Path) -> Optional[FixConfig]:
    try:
        table = nadc_table(pyproject, "fix")
    except PyprojectError as error:
        raise FixConfigError(str(error)) from None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise FixConfigError(f"{pyproject}: [tool.nadc.fix] must be a table")
    for key in table:
        if key not in ("disable", "unsafe"):
            raise FixConfigError(f"{pyproject}: unknown key `{key}` in [tool.nadc.fix] (use `disable`, `unsafe`)")
    disable = table.get("disable", [])
    if not (isinstance(disable, list) and all(isinstance(v, str) for v in disable)):
        raise FixConfigError(f"{pyproject}: [tool.nadc.fix] disable must be a list of fix kinds")
    known = all_kinds()
    for name in disable:
        if name not in known:
            raise FixConfigError(f"{pyproject}: `{name}` in [tool.nadc.fix] disable is not a fix kind "
                                 f"(`nadc explain fixes` lists them)")
    unsafe = table.get("unsafe", False)
    if not isinstance(unsafe, bool):
        raise FixConfigError(f"{pyproject}: [tool.nadc.fix] unsafe must be true or false")
    return FixConfig(frozenset(disable), unsafe, str(pyproject))


def fix_config_for(path: str) -> FixConfig:
    """The `[tool.nadc.fix]` configuration of a file (the default when none applies)."""
    folder = Path.cwd() if path in ("-", "<stdin>") else Path(path).parent
    folder = folder.resolve()
    for candidate_folder in (folder, *folder.parents):
        candidate = candidate_folder / "pyproject.toml"
        if candidate.is_file():
            found = _read(candidate)
            if found is not None:
                return found
    return FixConfig()
