"""What every trial of a run will need, checked before the first one: a run that must fail is
refused up front (`ConfigError`: exit 2, one line naming the fix), not after burning its trials.

* **packages**: each optional package the settings need (`needed_packages`): scikit-learn for
  the digits dataset, pymoo for Pareto selection, openai and faiss for the LLM strategies, Ray for
  the Ray executor, the official API package of a tabular benchmark file;
* **data**: the dataset's files exist and can be read (training, or a proxy that reads images:
  `--prescreen`/`--warm-start` with naswot, jacov, snip or grad_norm; synflow, zen, params and
  flops need none, so a table search with them runs without `--data-dir`);
* **tables** (`--evaluator`): the table holds the dataset asked for, the signal (validation
  accuracy at the preset's epochs, every rung's with `--fidelity`), the `--table-map` columns, the seeds (an official file's trials) and, under
  `--time-limit sim:N`, the per-epoch times. An official file is probed on a few of its cells:
  one cell's hole is a failed trial later, a hole in every probe is the file's. A derived table
  without a test accuracy is a warning of its summary: its trials still rank by validation, only
  the reported figure is missing. A derived table whose columns name no dataset serves any; its
  file name naming another dataset than the one asked for (``nb201_cifar10.json`` with
  ``--dataset imagenet16-120``) is refused.
"""
from __future__ import annotations

import difflib
import importlib.util
import re
import sys
from typing import List, Optional, Tuple

from nader.runtime.errors import ConfigError
from nader.runtime.presets import get_preset

from .evaluator import SEARCH_TRAINING_SETS
from .tables.lookup import opened
from .tables.derived import FileTable
from .tables.base import TableError
from .tables.benchmark import API_DATASET
from .fidelity import schedule_of
from .proxies import data_free, needs_data
from .spaces import nb201

LLM_STRATEGIES = ("nader", "fairnad", "genius")
KB_STRATEGIES = ("nader", "fairnad")
PROBES = 4  # cells of an official file a structural check is tried on


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (a test blocks one through
    ``sys.modules[name] = None`` or a meta-path finder that raises)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def needed_packages(config, own_evaluator: bool = False) -> List[Tuple[str, str, str]]:
    """(module, what needs it, the pip extra) for the settings (`own_evaluator`: the caller
    evaluates trials itself, so neither data nor a table is read)."""
    out = []
    trains = not config.evaluator and not own_evaluator
    if config.dataset == "digits" and (trains or _proxy_reads_images(config)):
        out.append(("sklearn", "the digits dataset", "data"))
    if trains and config.executor == "ray":
        out.append(("ray", "the Ray executor", "ray"))
    options = config.strategy_options or {}
    if config.strategy == "fairnad" or options.get("selection") == "pareto":
        what = "fairnad's Pareto ranking" if config.strategy == "fairnad" else "selection=pareto"
        out.append(("pymoo", what, "pareto"))
    if config.strategy in LLM_STRATEGIES and not options.get("replay"):
        out.append(("openai", f"the {config.strategy} strategy's LLM client", "agents"))
    if config.strategy in KB_STRATEGIES:
        out.append(("faiss", f"the {config.strategy} strategy's knowledge base", "agents"))
    kind = "" if own_evaluator else (config.evaluator or "").partition(":")[0]
    if kind == "nats-bench":
        out.append(("nats_bench", "--evaluator nats-bench:PATH", "tabular"))
    elif kind == "nas-bench-201":
        out.append(("nas_201_api", "--evaluator nas-bench-201:PATH", "tabular"))
    return out


PIP_NAMES = {"sklearn": "scikit-learn", "faiss": "faiss-cpu", "nats_bench": "nats-bench", "nas_201_api": "nas-bench-201"}


def check_packages(config, own_evaluator: bool = False) -> None:
    for module, what, extra in needed_packages(config, own_evaluator):
        if not installed(module):
            raise ConfigError(f"{what} needs {PIP_NAMES.get(module, module)}, which is not installed: "
                              f"pip install 'nader-toolchain[{extra}]'")


def _proxy_reads_images(config) -> list:
    """The proxies of --prescreen/--warm-start that read images (none: no data is needed for them)."""
    return needs_data(config.proxy) if config.uses_proxy() else []


def check_data(config) -> None:
    """The dataset's files, present and readable, when trials (or a proxy) read them. A proxy that
    needs images without a --data-dir is refused with the data-free proxies named."""
    readers = _proxy_reads_images(config)
    if config.dataset == "digits" or (config.evaluator and not readers):
        return
    if readers and not config.data_dir:
        raise ConfigError(f"--proxy {config.proxy}: {', '.join(readers)} read images of {config.dataset}, and no "
                          f"--data-dir is given; give --data-dir, or a proxy that needs no data: "
                          f"{', '.join(data_free())}")
    if config.executor == "ray" and config.address:  # the cluster's machines hold the data
        return
    from nader.runtime.data import check_dataset

    check_dataset(config.dataset, config.data_dir)


def preflight(config, own_evaluator: bool = False) -> List[str]:
    """Refuse (ConfigError) what would fail every trial; the warnings of what may not."""
    # A Python objective or a registered evaluator answers trials its own way: no table or data to check.
    own_evaluator = own_evaluator or config.custom_objectives
    check_packages(config, own_evaluator)
    if own_evaluator:
        return []
    check_data(config)
    if config.evaluator:
        return check_table(config)
    return []


# ---------------------------------------------------------------------- tables


def check_rungs(config, table, dataset: str) -> None:
    """A multi-fidelity search on a table needs an answer at every rung's epochs: refuse it at the
    start, naming the budgets the table has, rather than fail every trial of a rung."""
    schedule = schedule_of(config)
    if schedule is None:
        return
    held = table.valid_schedules(dataset)
    missing = [e for e in schedule.budgets if e not in held]
    if missing:
        raise ConfigError(f"--fidelity needs validation accuracy at {', '.join(map(str, schedule.budgets))} epochs; "
                          f"the table has none at {', '.join(map(str, missing))} (it has {_have(held) or 'none'}): "
                          f"choose --min-epochs, --eta and --epochs (or --preset) whose rungs it holds")


def _epochs(config) -> List[int]:
    schedule = schedule_of(config)
    if schedule is not None:
        return list(schedule.budgets)
    return [int(config.epochs or get_preset(config.preset).epochs)]


def _fix_epochs(held: set) -> str:
    if not held:
        return ""
    if 200 in held:
        return " (--preset nb201 or --epochs 200 reads its 200-epoch column)"
    return f" (--epochs {max(held)} reads it)"


def _columns(table, most: int = 12) -> str:
    """The table's columns for a one-line message: the first `most`, then how many in all."""
    cols = table.columns
    shown = ", ".join(cols[:most]) or "none"
    return shown if len(cols) <= most else f"{shown}, ... ({len(cols):,} in all)"


def _have(held: set) -> str:
    return ", ".join(map(str, sorted(held))) if len(held) < 20 else f"{min(held)} to {max(held)}"


def check_table(config) -> List[str]:
    try:
        table = opened(config.evaluator, config.table_map)
    except TableError as exc:
        raise ConfigError(str(exc)) from None
    dataset = SEARCH_TRAINING_SETS.get(config.dataset, config.dataset)
    check_rungs(config, table, dataset)
    if isinstance(table, FileTable):
        return _check_file_table(config, table, dataset)
    return _check_official(config, table, dataset)


def _check_file_table(config, table, dataset: str) -> List[str]:
    name = table.path.name
    for metric, column in (config.table_map or {}).items():
        if table.column(metric, dataset) is None:
            close = difflib.get_close_matches(column, [c.rpartition(":")[2] for c in table.columns], n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"--table-map {metric}={column}: table {name} has no column {column!r} "
                              f"for {dataset}; {hint}its columns: {_columns(table)}")
    held = table.datasets()
    if held and dataset not in held and not table.valid_schedules(dataset):
        raise ConfigError(f"table {name} holds {', '.join(sorted(held))}, not {dataset}: choose --dataset "
                          f"{' or '.join(sorted(held))}, or a table of {dataset}")
    named = _named_dataset(name) if not held else None
    if named is not None and named != _family(dataset):
        raise ConfigError(f"table {name}: its name says {named}, its columns name no dataset, and the search asks "
                          f"for {dataset}: choose --dataset {named}, or name the columns {dataset}:COLUMN if it "
                          f"holds {dataset}")
    valid = table.valid_schedules(dataset)
    for epochs in _epochs(config):
        if epochs not in valid:
            has = f"it has validation accuracy at {_have(valid)} epochs{_fix_epochs(valid)}" if valid else \
                "it has no validation accuracy column"
            raise ConfigError(f"table {name} has no validation accuracy at {epochs} epochs for {dataset} "
                              f"(valid_acc@{epochs}, the search's signal); {has}, or --table-map "
                              f"valid_acc@{epochs}=COLUMN names one; its columns: {_columns(table)}")
    if config.sim_time_limit is not None and table.column("epoch_seconds", dataset) is None:
        raise ConfigError(f"--time-limit sim:{config.sim_time_limit:g} counts the table's simulated training "
                          f"time, but table {name} has no seconds per epoch (epoch_seconds): --table-map "
                          f"epoch_seconds=COLUMN names them, or give a --trials limit instead")
    return []  # what may still fail (holes, no test accuracy) the table's summary lists


_NAMED = re.compile(r"(?<![a-z0-9])(cifar-?100|cifar-?10|imagenet-?16(?:-120)?)(?![0-9])")


def _family(dataset: str) -> str:
    return {"cifar10-valid": "cifar10"}.get(dataset, dataset)


def _named_dataset(filename: str) -> Optional[str]:
    """The one dataset a table's file name names (``nb201_cifar10_full.json``: cifar10), or None."""
    found = {m.replace("-", "") for m in _NAMED.findall(filename.lower())}
    found = {"imagenet16-120" if f.startswith("imagenet") else f for f in found}
    return found.pop() if len(found) == 1 else None


def _probe_cells(config, table) -> List[str]:
    cells = []
    try:
        cells.append(str(nb201.cell_of_text(config.root_text)))
    except Exception:  # noqa: BLE001 - no root cell: the table's own cells serve
        pass
    api = table.api
    indexes = sorted(getattr(api, "evaluated_indexes", ()) or ())[:PROBES]
    cells += [str(api.meta_archs[i]) for i in indexes]
    return list(dict.fromkeys(cells))[:PROBES + 1]


def _check_official(config, table, dataset: str) -> List[str]:
    name = table.path.name
    cells = _probe_cells(config, table)
    if not cells:
        raise ConfigError(f"{table.kind}: {name} holds no evaluated architecture")
    held = _official_datasets(table, cells)
    if held and API_DATASET.get(dataset) not in held:
        ours = sorted(k for k, v in API_DATASET.items() if v in held)
        raise ConfigError(f"{table.kind}: {name} holds {', '.join(sorted(held))}, not {API_DATASET.get(dataset)}: "
                          f"choose --dataset {' or '.join(ours) or '...'}, or a file with {dataset}")
    valid = table.valid_schedules(dataset)
    for epochs in _epochs(config):
        if epochs not in valid:
            raise ConfigError(f"{table.kind}: {name} has no results at {epochs} epochs (it has {_have(valid)}); "
                              f"choose --epochs or --preset accordingly")
    seeds = config.resolved_seeds()
    for epochs in _epochs(config):
        for seed in seeds:
            errors, records = [], []
            for cell in cells:
                try:
                    records.append(table.evaluate(cell, dataset, epochs, seed))
                except TableError as exc:
                    errors.append(exc)
            if records:
                continue
            if errors and all(e.kind == "missing-seed" for e in errors):
                raise ConfigError(f"{errors[0]}; give --seeds from those")
            if errors:
                raise ConfigError(f"no probed cell of {name} answers at {epochs} epochs with seed {seed}: {errors[0]}")
    if config.sim_time_limit is not None:
        record = _first_record(table, cells, dataset, _epochs(config)[0])
        if record is not None and record.seconds is None:
            raise ConfigError(f"--time-limit sim:{config.sim_time_limit:g} counts simulated training time, but "
                              f"{name} records no training times: give a --trials limit instead")
    return []


def _official_datasets(table, cells) -> set:
    out: set = set()
    api = table.api
    for cell in cells:
        try:
            index = api.query_index_by_arch(cell)
            hp = sorted(str(h) for h in api.avaliable_hps)[0]
            out |= set(api.query_meta_info_by_index(index, hp).get_dataset_names())
        except Exception:  # noqa: BLE001 - a hole: another probe answers
            continue
    return out


def _first_record(table, cells, dataset, epochs) -> Optional[object]:
    for cell in cells:
        try:
            return table.evaluate(cell, dataset, epochs, None)
        except TableError:
            continue
    return None
