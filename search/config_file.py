"""Reading a search's settings from a file: SEARCH.toml's keys, looked up in the settings table
(`search/settings.py`), each value read by its setting's reader (`nader.inputs`: a regular file
of bounded size, UTF-8, bounded nesting; finite numbers in range), as the flags and the API read
theirs, before `config.py` turns the layers into a `SearchConfig`.
"""
from __future__ import annotations

from pathlib import Path

from nader.inputs import InputError, load_toml, read_bounded_text
from nader.inputs.settings import MOST_INT, Integer, IntList
from nader.runtime.errors import ConfigError

from .settings import (DATASETS, MAX_ROOT_BYTES, PATH_FIELDS, PROXIES, ROOT_MODES, RUN_SETTINGS, SEARCH_SETTINGS,
                       TOML_KEYS)

__all__ = ["DATASETS", "PROXIES", "ROOT_MODES", "MAX_ROOT_BYTES", "MOST_INT", "INT_RANGES", "read_toml", "read_root",
           "resolve_evaluator", "parse_memory", "parse_time_limit"]

#: a search.toml is a few hundred bytes; its tables nest two deep (`[strategy-options]`, `train`)
MAX_TOML_BYTES = 1 << 20
MAX_TOML_DEPTH = 16
#: the bounds of the integer settings, by SearchConfig field (the settings' own), for checks of
#: settings that came in as Python values (`run_search`)
INT_RANGES = {s.field: (s.kind.lo, s.kind.hi) for s in SEARCH_SETTINGS if isinstance(s.kind, (Integer, IntList))}
_BY_FIELD = {s.field: s for s in RUN_SETTINGS}


def read_toml(path) -> dict:
    """The settings of a TOML file, as SearchConfig fields (paths made relative to the file)."""
    path = Path(path)
    try:  # a regular file, bounded, UTF-8, nesting bounded: /dev/zero and FIFOs are refused unread
        data = load_toml(path, "search configuration", max_depth=MAX_TOML_DEPTH, max_bytes=MAX_TOML_BYTES)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    out = {}
    for key, value in data.items():
        name = key.replace("_", "-")
        if name not in TOML_KEYS:
            raise ConfigError(f"{path}: unknown setting {key!r}; known: {', '.join(TOML_KEYS)}")
        setting = TOML_KEYS[name]
        if setting.field in PATH_FIELDS and isinstance(value, str) and value and \
                not Path(value).expanduser().is_absolute():  # relative to the file, before it is looked at
            value = str(path.parent / Path(value).expanduser())
        try:
            out[setting.field] = setting.read(value, name)
        except InputError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    if "data_dir" in out:
        out["data_dir"] = str(Path(out["data_dir"]).expanduser().resolve())
    if "evaluator" in out:
        out["evaluator"] = resolve_evaluator(out["evaluator"], path.parent)
    return out


def resolve_evaluator(spec: str, base: Path = Path(".")) -> str:
    """`KIND:PATH` with PATH made absolute (relative to `base`); `training` as it is."""
    kind, sep, file = str(spec).partition(":")
    if not sep or not file:
        return spec
    path = base / Path(file).expanduser()
    try:
        path = path.resolve()
    except (RuntimeError, OSError):  # a symlink loop: left as written, for the reader to name
        path = path.absolute()
    return f"{kind.strip().lower()}:{path}"


def _read(field: str, value):
    """`value` read by the setting of `field`, as a TOML key is; ConfigError naming the key."""
    setting = _BY_FIELD[field]
    try:
        return setting.read(value, setting.toml)
    except InputError as exc:
        raise ConfigError(str(exc)) from None


def parse_memory(value) -> int:
    """A memory budget: MiB as a number (6144), or with a unit (512M, 6G, 6GiB). Returns bytes."""
    return _read("max_memory", value)


def parse_time_limit(value):
    """A time limit: seconds (600), a duration (90s, 10m, 2h) or simulated seconds of a tabular
    benchmark (``sim:20000``, also ``sim:10m``). Returns seconds, or ``"sim:SECONDS"``."""
    return _read("time_limit", value)


def _time_limit_fields(value) -> dict:
    parsed = parse_time_limit(value)
    if isinstance(parsed, str):
        return {"sim_time_limit": float(parsed[4:])}
    return {"time_limit": parsed}


def read_root(path) -> str:
    try:
        return read_bounded_text(Path(path).expanduser(), "root architecture", max_bytes=MAX_ROOT_BYTES)
    except InputError as exc:
        raise ConfigError(f"cannot read the root architecture {path}: {str(exc).partition(': ')[2]}") from None


