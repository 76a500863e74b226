"""The `[tool.nadc.<name>]` tables of a pyproject.toml, read once per file.

`nadc lint` (`[tool.nadc.lint]`) and the input limits (`[tool.nadc.limits]`) both configure
themselves from the nearest pyproject.toml; reading and the read errors are the same for both.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from nader.inputs import InputError, load_toml


class PyprojectError(ValueError):
    """A pyproject.toml that cannot be read; the message names the file."""


#: a pyproject.toml is a few kilobytes; its `[tool.nadc]` tables nest two or three deep
MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32


@lru_cache(maxsize=256)
def _tool_nadc(pyproject: Path) -> dict:
    try:  # a regular file of bounded size, UTF-8, nesting bounded (nader.inputs)
        data = load_toml(Path(pyproject), "project configuration", max_depth=MAX_DEPTH, max_bytes=MAX_BYTES)
    except InputError as error:
        raise PyprojectError(str(error)) from None
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        raise PyprojectError(f"{pyproject}: reading configuration needs Python 3.11+ or the `tomli` "
                             f"package") from None
    tool = data.get("tool")
    nadc = tool.get("nadc") if isinstance(tool, dict) else None
    return nadc if isinstance(nadc, dict) else {}


def nadc_table(pyproject: Path, name: str):
    """The value of `[tool.nadc.<name>]` (None when absent). Raises PyprojectError."""
    return _tool_nadc(pyproject).get(name)
