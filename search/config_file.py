"""Reading a search's settings from outside: SEARCH.toml's keys and the flags' value syntax.

Every value is bounded and typed here (`nader.inputs`: a regular file of bounded size, UTF-8,
bounded nesting; finite numbers in range) before `config.py` turns the layers into a
`SearchConfig`. The flags use the same parsers, so a TOML file and the command line agree.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Dict, List

from nader.inputs import InputError, finite_number, load_toml, read_bounded_text
from nader.runtime.errors import ConfigError

from .objectives import parse_objectives

DATASETS = ("digits", "cifar10", "cifar10-valid", "cifar100", "imagenet16-120")  # cifar10 searches as cifar10-valid
# the proxies' names for --help, which imports no proxy module (tests compare them with nader.search.proxies)
PROXIES = ("flops", "grad_norm", "jacov", "naswot", "params", "snip", "synflow", "zen")
ROOT_MODES = ("train", "none")  # --root: the root is trial 1, or only where the tree hangs


#: a search.toml is a few hundred bytes; its tables nest two deep (`[strategy-options]`, `train`)
MAX_TOML_BYTES = 1 << 20
MAX_TOML_DEPTH = 16
#: the root architecture: nadc's default text limit
MAX_ROOT_BYTES = 1 << 20
#: the most an integer setting may be (SQLite stores 64-bit integers; a seed seeds numpy's 32-bit generator)
MOST_INT = 2**53
INT_RANGES = {"seeds": (0, 2**32 - 1), "seed": (0, 2**32 - 1), "depths": (1, 10_000)}


def _int_list(name):
    lo, hi = INT_RANGES.get(name, (-MOST_INT, MOST_INT))

    def parse(v):
        if isinstance(v, str):
            v = [p for p in v.replace(" ", "").split(",") if p]
        if not isinstance(v, list) or not v or not all(isinstance(x, int) or str(x).lstrip("-").isdigit() for x in v):
            raise ConfigError(f"{name}: expected a list of integers, got {str(v)[:80]!r}")
        return [finite_number(x, name, lo=lo, hi=hi, integer=True, from_text=True) for x in v]
    return parse


def _typed(name, kind):
    lo, hi = INT_RANGES.get(name, (-MOST_INT, MOST_INT))

    def parse(v):
        if kind is float and isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(finite_number(v, name, lo=-MOST_INT, hi=MOST_INT))  # nan and inf are not settings
        if kind is int and isinstance(v, int) and not isinstance(v, bool):
            return finite_number(v, name, lo=lo, hi=hi, integer=True)
        if kind is str and isinstance(v, str):
            return v
        if kind is dict and isinstance(v, dict):
            return dict(v)
        raise ConfigError(f"{name}: expected {kind.__name__}, got {str(v)[:80]!r}")
    return parse


# TOML key -> (SearchConfig field, parser); flags use the same names
KEYS = {
    "from": ("root", _typed("from", str)),
    "strategy": ("strategy", _typed("strategy", str)),
    "strategy-options": ("strategy_options", _typed("strategy-options", dict)),
    "dataset": ("dataset", _typed("dataset", str)),
    "data-dir": ("data_dir", _typed("data-dir", str)),
    "preset": ("preset", _typed("preset", str)),
    "seeds": ("seeds", _int_list("seeds")),
    "skeleton": ("skeleton", _typed("skeleton", str)),
    "depths": ("depths", _int_list("depths")),
    "trials": ("trials", _typed("trials", int)),
    "max-invalid": ("max_invalid", _typed("max-invalid", int)),
    "time-limit": ("time_limit", lambda v: parse_time_limit(v)),
    "table-map": ("table_map", lambda v: parse_table_map(v)),
    "executor": ("executor", _typed("executor", str)),
    "workers": ("workers", _typed("workers", int)),
    "address": ("address", _typed("address", str)),
    "run-dir": ("run_dir", _typed("run-dir", str)),
    "seed": ("seed", _typed("seed", int)),
    "prescreen": ("prescreen", _typed("prescreen", int)),
    "proxy": ("proxy", _typed("proxy", str)),
    "warm-start": ("warm_start", lambda v: parse_warm_start(v)),
    "proxy-cache": ("proxy_cache", _typed("proxy-cache", str)),
    "max-params": ("max_params", _typed("max-params", int)),
    "max-flops": ("max_flops", _typed("max-flops", int)),
    "max-memory": ("max_memory", lambda v: parse_memory(v)),
    "llm-max-cost": ("max_cost", _typed("llm-max-cost", float)),
    "llm-max-tokens": ("max_tokens", _typed("llm-max-tokens", int)),
    "max-cost": ("max_cost", _typed("max-cost", float)),  # the old names, for one release
    "max-tokens": ("max_tokens", _typed("max-tokens", int)),
    "epochs": ("epochs", _typed("epochs", int)),
    "train": ("train_options", _typed("train", dict)),
    "threads": ("threads", _typed("threads", int)),
    "device": ("device", _typed("device", str)),
    "trial-timeout": ("trial_timeout", _typed("trial-timeout", float)),
    "trials-per-gpu": ("trials_per_gpu", _typed("trials-per-gpu", int)),
    "space": ("space", _typed("space", str)),
    "evaluator": ("evaluator", _typed("evaluator", str)),
    "fidelity": ("fidelity", _typed("fidelity", str)),
    "eta": ("eta", _typed("eta", int)),
    "min-epochs": ("min_epochs", _typed("min-epochs", int)),
    "repair": ("repair", _typed("repair", str)),
    "objective": ("objectives", lambda v: parse_objective_list(v)),
    "root": ("root_mode", _typed("root", str)),
}
_PATH_KEYS = ("root", "data_dir", "run_dir", "proxy_cache")


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
        if name not in KEYS:
            raise ConfigError(f"{path}: unknown setting {key!r}; known: {', '.join(KEYS)}")
        attr, parse = KEYS[name]
        try:
            out[attr] = parse(value)
        except (InputError, ConfigError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
    for attr in _PATH_KEYS:
        if attr in out and not Path(out[attr]).expanduser().is_absolute():
            out[attr] = str((path.parent / Path(out[attr]).expanduser()))
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


def parse_warm_start(value):
    """`--warm-start`: a number of architectures to score before the first query, or ``all`` (the
    whole space); 0 is off. Returns the int, ``"all"`` or None."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return "all"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MOST_INT:
        raise ConfigError(f"warm-start: expected a number of architectures (0: off) or all, not {str(value)[:40]!r}")
    return value or None


def parse_memory(value) -> int:
    """A memory budget: MiB as a number (6144), or with a unit (512M, 6G, 6GiB). Returns bytes."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = f"{value!r}"
    else:
        text = str(value).strip()
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*([mMgGtT]?)(?:i?[bB])?", text)
    if not m or float(m.group(1)) <= 0 or not math.isfinite(float(m.group(1))):
        raise ConfigError(f"max-memory: expected a positive size such as 6144 (MiB), 512M or 6G, not {value!r}")
    size = float(m.group(1)) * 2 ** {"": 20, "m": 20, "g": 30, "t": 40}[m.group(2).lower()]
    if size > 2 ** 60:
        raise ConfigError(f"max-memory: {value!r} is larger than any machine")
    return int(size)


def parse_time_limit(value):
    """A time limit: seconds (600), a duration (90s, 10m, 2h) or simulated seconds of a tabular
    benchmark (``sim:20000``, also ``sim:10m``). Returns seconds, or ``"sim:SECONDS"``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip().lower()
    sim = text.startswith("sim:")
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*([smh]?)", text[4:].strip() if sim else text)
    if not m or float(m.group(1)) <= 0:
        raise ConfigError(f"time-limit: expected a positive duration such as 600, 90s, 10m, 2h, or simulated "
                          f"seconds such as sim:20000, not {value!r}")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return f"sim:{seconds:g}" if sim else seconds


def _time_limit_fields(value) -> dict:
    parsed = parse_time_limit(value)
    if isinstance(parsed, str):
        return {"sim_time_limit": float(parsed[4:])}
    return {"time_limit": parsed}


def parse_table_map(value) -> Dict[str, str]:
    """``metric=column,...`` (a flag) or a TOML table: which column of a table:PATH file holds a metric."""
    if isinstance(value, dict):
        pairs = list(value.items())
    else:
        pairs = []
        for part in str(value).split(","):
            if not part.strip():
                continue
            metric, sep, column = part.partition("=")
            if not sep or not metric.strip() or not column.strip():
                raise ConfigError(f"table-map: expected METRIC=COLUMN,..., got {part.strip()!r}")
            pairs.append((metric, column))
    return {str(k).strip(): str(v).strip() for k, v in pairs}


def parse_objective_list(value) -> List[str]:
    """``valid_acc:max,params:min`` (a flag) or a TOML list: the objectives as NAME:DIRECTION."""
    return [str(o) for o in parse_objectives(value)]


def read_root(path) -> str:
    try:
        return read_bounded_text(Path(path).expanduser(), "root architecture", max_bytes=MAX_ROOT_BYTES)
    except InputError as exc:
        raise ConfigError(f"cannot read the root architecture {path}: {str(exc).partition(': ')[2]}") from None


