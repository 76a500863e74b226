"""The `[tool.nadc.<name>]` tables of a pyproject.toml, read once per file.

`nadc lint` (`[tool.nadc.lint]`), the input limits (`[tool.nadc.limits]`) and `nadc fix`
(`[tool.nadc.fix]`) configure themselves from the nearest pyproject.toml; reading and the read
errors are the same for all.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path


class PyprojectError(ValueError):
    """A pyproject.toml that cannot be read; the message names the file."""


@lru_cache(maxsize=256)
def _tool_nadc(pyproject: Path) -> dict:
    try:
        import tomllib as toml  # only where a pyproject.toml is found: most runs have none to read
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        try:
            import tomli as toml  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise PyprojectError(f"{pyproject}: reading configuration needs Python 3.11+ or the `tomli` "
                                 f"package") from None
    try:
        with open(pyproject, "rb") as file:
            data = toml.load(file)
    except OSError as error:
        raise PyprojectError(f"{pyproject}: cannot read: {error.strerror or error}") from None
    except ValueError as error:  # tomllib.TOMLDecodeError
        raise PyprojectError(f"{pyproject}: invalid TOML: {error}") from None
    tool = data.get("tool")
    nadc = tool.get("nadc") if isinstance(tool, dict) else None
    return nadc if isinstance(nadc, dict) else {}


def nadc_table(pyproject: Path, name: str):
    """The value of `[tool.nadc.<name>]` (None when absent). Raises PyprojectError."""
    return _tool_nadc(pyproject).get(name)
