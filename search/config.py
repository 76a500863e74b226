"""A search's configuration: defaults, the run directory's stored settings, a TOML file, flags.

Later sources override earlier ones: built-in defaults < the settings stored in the run
directory (when resuming) < the TOML file < command-line flags. A TOML file uses the flags'
names (``data-dir`` or ``data_dir``) at the top level, and strategy options in a
``[strategy-options]`` table; relative paths in it are relative to the file::

    from = "examples/resnet_basic.nad"
    strategy = "rea"
    trials = 30
    [strategy-options]
    population = 10

The *identity* of a search (what a resume must not change) is everything that shapes the tree
or its numbers: the root, strategy and options, dataset, preset, seeds, skeleton, depths,
budget, prescreening, training options, the seed, and the search space, tabular evaluator and
multi-fidelity schedule (when not the defaults). Stop conditions (trials, time limit, invalid
proposals in a row, dollar and token caps), the executor, workers, threads and the data
directory's location may change between runs.

Checking a configuration needs the compiler (budgets, skeletons, repair modes), the spaces, the
evaluators and the strategies table, imported at the top: only a run loads this module. The
flags' choices (datasets, proxies) live in `config_file.py`, so `nader-search --help` does not.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from nader.compiler.skeletons import skeleton_info
from nader.compiler.datasets import dataset_info
from nader.compiler.fit import Budget, FitError, preset_budget
from nader.compiler.plan import resolve_depths
from nader.compiler.reply_repair import REPAIR_MODES
from nader.runtime.errors import ConfigError
from nader.runtime.memory import default_memory_budget
from nader.runtime.options import EXECUTORS  # one spelling, shared with eval
from nader.runtime.presets import check_options, get_preset, resolve

from .auto import resolve_auto
from .checks import arch_hash_of_text
from .config_file import DATASETS, INT_RANGES, MOST_INT, PROXIES, ROOT_MODES, _time_limit_fields, read_root
from .tables.derived import KIND as TABLE_KIND, check_table_map
from .tables.benchmark import KINDS, TABULAR_DATASETS
from .fidelity import schedule_of
from .objectives import check_known, parse_objectives, require_pymoo
from .proxies import members
from .pruners import make_pruner
from .registry import evaluator_factory
from .spaces import nb201
from .spaces.space import SPACES, get_space
from .strategies import STRATEGIES, get_strategy
from .warm_start import ALL

__all__ = ["DATASETS", "PROXIES", "ROOT_MODES", "SearchConfig", "differences", "merge"]



@dataclass
class SearchConfig:
    root: Optional[str] = None  # path of the root architecture (for messages)
    root_text: Optional[str] = None
    strategy: str = "auto"  # resolved by `auto.resolve_auto` when the settings are merged or checked
    strategy_options: Dict[str, Any] = field(default_factory=dict)
    dataset: str = "digits"
    data_dir: Optional[str] = None
    preset: str = "quick"
    seeds: Optional[List[int]] = None  # default: the preset's
    skeleton: str = "nb201"
    depths: Optional[List[int]] = None  # default: the skeleton's
    trials: int = 30  # architectures sent to training, the root included
    max_invalid: int = 10  # invalid proposals in a row (no valid architecture) before the search stops
    time_limit: Optional[float] = None  # seconds of this invocation; no new trial starts after it
    sim_time_limit: Optional[float] = None  # simulated training seconds of the run (a table's times)
    executor: str = "local"
    workers: Optional[int] = None
    address: Optional[str] = None  # Ray cluster
    run_dir: Optional[str] = None
    seed: int = 0
    prescreen: int = 0  # K > 1: score K valid candidates by a zero-cost proxy, train the best
    proxy: str = "synflow"  # a proxy of nader.search.proxies, or several joined by + (an ensemble)
    warm_start: Optional[Any] = None  # N, or "all": score N architectures by the proxy before the first query
    proxy_cache: Optional[str] = None  # a file of proxy scores shared by runs (besides the run's own store)
    max_params: Optional[int] = None  # default: the budget preset of the skeleton and dataset
    max_flops: Optional[int] = None
    max_memory: Optional[int] = None  # bytes a training step may take [default: a share of the device]
    max_cost: Optional[float] = None  # dollars (LLM strategies)
    max_tokens: Optional[int] = None
    epochs: Optional[int] = None  # overrides the preset's
    train_options: Dict[str, Any] = field(default_factory=dict)  # other preset overrides
    threads: Optional[int] = None  # torch threads per trial
    device: Optional[str] = None
    trial_timeout: Optional[float] = None  # seconds per trial (pool executor)
    trials_per_gpu: Optional[int] = None  # pool on GPUs: trials side by side per device (default: measured)
    builder: Optional[str] = None  # "module:function" building networks (tests)
    space: str = "language"  # language | nb201 (nader.search.spaces.space)
    evaluator: Optional[str] = None  # None: training; "nats-bench:PATH", "nas-bench-201:PATH", "table:PATH"
    table_map: Dict[str, str] = field(default_factory=dict)  # table: metric -> column (tables/derived.py)
    fidelity: Optional[str] = None  # None: full budget; successive-halving | hyperband (nader.search.fidelity)
    eta: int = 3  # fidelity: 1/eta of a rung is promoted; budgets grow by eta
    min_epochs: Optional[int] = None  # fidelity: the lowest rung's epochs [default: ceil(full / eta**2)]
    repair: Optional[str] = None  # off | suggest | auto: the compiler's repair of LLM blocks [default: the strategy's]
    objectives: Optional[List[str]] = None  # None: valid_acc:max; else ["valid_acc:max", "params:min"] (objectives.py)
    root_mode: Optional[str] = None  # train | none (--root); default: trains_root()
    pruner: Optional[dict] = None  # a Python objective's pruner spec ({"name": ...}; nader.search.pruners)

    # ------------------------------------------------------------------ derived values
    def resolve(self) -> None:
        """`--strategy auto` replaced by what it chooses (`auto.py`); the line saying so is kept in
        `chosen` (not a setting: the run records the strategy chosen) for the progress display."""
        line = resolve_auto(self)
        if line:
            self.chosen = line

    def resolved_seeds(self) -> List[int]:
        return list(self.seeds) if self.seeds else list(get_preset(self.preset).seeds)

    def budget(self):
        """The params/FLOPs budget: the skeleton's and dataset's preset (NADER's: 1.5 M parameters,
        0.2 GFLOPs on CIFAR, 0.05 GFLOPs on ImageNet16-120), with explicit limits overriding; and
        when trials train, the training memory at the preset's batch size (`max_memory`, or a
        share of the device's memory: `nader.runtime.memory`)."""
        try:
            base = preset_budget(self.skeleton, dataset_info(self.dataset).name, resolve_depths(skeleton_info(self.skeleton), self.depths))
        except FitError:
            base = Budget()
        params = self.max_params if self.max_params is not None else base.params
        flops = self.max_flops if self.max_flops is not None else base.flops
        if params is None and flops is None:
            raise ConfigError(f"no budget preset for the {self.skeleton} skeleton on {self.dataset}; "
                              f"give --max-params or --max-flops")
        label = base.label if (params, flops) == (base.params, base.flops) else "given"
        memory = self.max_memory
        if memory is None and self.evaluator is None:
            memory = default_memory_budget(self.device, self.trials_per_gpu or 1)[0]
        return Budget(params, flops, memory, label=label, batch_size=resolve(self.preset, self.job_options()).batch_size)

    def effective_repair(self) -> str:
        """`--repair`, or the strategy's default: `auto` for those whose LLM writes blocks (`block_repairs`), else off."""
        if self.repair is not None:
            return self.repair
        writes_blocks = getattr(get_strategy(self.strategy), "block_repairs", False) and self.space == "language"
        return "auto" if writes_blocks else "off"

    def trains_root(self) -> bool:
        """Whether the root is trial 1 (`--root train`) or only where the tree hangs (`--root none`).
        By default a strategy that says so (`Strategy.rootless`: random, rea, local) starts from
        nothing in a space with a uniform distribution, as the published NAS-Bench-201 baselines
        do; the block language always trains its root, which every search there modifies."""
        if self.root_mode is not None:
            return self.root_mode == "train"
        space, strategy = SPACES.get(self.space), STRATEGIES.get(self.strategy)
        return not (getattr(space, "uniform", False) and getattr(strategy, "rootless", False))

    def uses_proxy(self) -> bool:
        """Whether the search scores architectures by the proxy (prescreening, a warm start, or a
        strategy that reads proxies: `Strategy.uses_proxies`)."""
        strategy = STRATEGIES.get(self.strategy) if self.strategy in STRATEGIES else None
        return self.prescreen > 1 or bool(self.warm_start) or bool(getattr(strategy, "uses_proxies", False))

    def job_options(self) -> dict:
        opts = dict(self.train_options)
        for key, value in (("epochs", self.epochs), ("threads", self.threads), ("device", self.device)):
            if value is not None:
                opts[key] = value
        return opts

    def default_run_dir(self) -> str:
        stem = Path(self.root).stem if self.root else self.space if self.space != "language" else "search"
        return str(Path("runs") / f"{stem}-{self.strategy}-{self.dataset}-seed{self.seed}")

    def identity(self) -> dict:
        """What a resumed run must share with the run it continues."""
        budget = self.budget()
        opts = {k: v for k, v in self.job_options().items() if k not in ("threads", "device")}
        return {
            "root": arch_hash_of_text(self.root_text, self.skeleton) if self.root_text else None,
            "strategy": self.strategy,
            "strategy_options": {k: v for k, v in get_strategy(self.strategy).resolve_options(self.strategy_options)
                                 .items() if k not in get_strategy(self.strategy).session_options},
            "dataset": self.dataset, "preset": self.preset, "seeds": self.resolved_seeds(),
            "skeleton": self.skeleton, "depths": list(resolve_depths(skeleton_info(self.skeleton), self.depths)),
            "budget": {"params": budget.params, "flops": budget.flops},
            "prescreen": self.prescreen if self.prescreen > 1 else 0,
            "proxy": self.proxy if self.uses_proxy() else None,
            **({"warm_start": self.warm_start} if self.warm_start else {}),
            "train_options": opts, "seed": self.seed, "builder": self.builder,
            **({"space": self.space} if self.space != "language" else {}),
            **({"evaluator": self.evaluator} if self.evaluator else {}),
            **({"table_map": self.table_map} if self.table_map else {}),
            **({} if self.trains_root() else {"root_trained": False}),
            **({"fidelity": {"method": self.fidelity, "eta": self.eta, "min_epochs": self.min_epochs}}
               if self.fidelity else {}),
            **({"repair": self.effective_repair()} if self.effective_repair() != "off" else {}),
            **({"objectives": list(self.objectives)} if self.objectives else {}),
            **({"pruner": self.pruner_object().spec()} if self.pruner else {}),
        }

    def pruner_object(self):
        """The pruner (`nader.search.pruners`): its spec, with the study's eta, min_epochs and epochs
        where it names only a rule; None without one."""
        return make_pruner(self.pruner, eta=self.eta, min_resource=self.min_epochs, max_resource=self.epochs)

    def to_record(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("run_dir", None)
        return d

    @classmethod
    def from_record(cls, record: dict) -> "SearchConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in known})

    # ------------------------------------------------------------------ checks
    def check(self) -> None:
        self.resolve()
        space = get_space(self.space)
        if space.skeleton is not None and self.skeleton != space.skeleton:
            raise ConfigError(f"the {self.space} space runs on the {space.skeleton} skeleton, not {self.skeleton}; "
                              f"leave --skeleton out")
        kind = (self.evaluator or "").partition(":")[0].strip().lower()
        if kind and kind != "training" and not self.root_text:  # a table answers cells; the space brings a root
            raise ConfigError(f"--evaluator {kind}: a tabular benchmark answers NAS-Bench-201 cells: add --space "
                              f"nb201 (or `space = \"nb201\"` in the TOML file)")
        if self.evaluator is not None:
            self.check_evaluator()
        if self.sim_time_limit is not None and not self.evaluator:
            raise ConfigError("--time-limit sim:N counts simulated training time, which only a tabular evaluator "
                              "has (--evaluator nats-bench:PATH, nas-bench-201:PATH or table:PATH); give a wall-clock "
                              "limit (600, 10m, 2h) when training")
        if self.table_map and not (self.evaluator or "").startswith("table:"):
            raise ConfigError("--table-map names columns of a table:PATH evaluator; give --evaluator table:FILE")
        if not self.root_text:
            raise ConfigError("no root architecture: give --from ARCH.nad (or `from` in the TOML file)")
        if self.dataset not in DATASETS:
            raise ConfigError(f"unknown dataset {self.dataset!r}; choose one of: {', '.join(DATASETS)}")
        if self.executor not in EXECUTORS:
            raise ConfigError(f"unknown executor {self.executor!r}; choose one of: {', '.join(EXECUTORS)}")
        members(self.proxy)  # a ConfigError naming the known proxies
        self.check_warm_start(space)
        check_options(self.job_options())
        resolve(self.preset, self.job_options())
        self.strategy_options = get_strategy(self.strategy).resolve_options(self.strategy_options)
        refuse_space = getattr(get_strategy(self.strategy), "refuse_space", None)
        if refuse_space is not None and refuse_space(space):
            raise ConfigError(refuse_space(space))
        for name in ("trials", "max_invalid", "workers", "epochs", "threads", "max_params", "max_flops", "max_memory",
                     "max_tokens", "trials_per_gpu"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name.replace('_', '-')} must be at least 1, not {value}")
        for name in ("time_limit", "sim_time_limit", "trial_timeout", "max_cost"):
            value = getattr(self, name)
            if value is not None and not 0 < value < math.inf:  # nan and inf too: a NaN cap would switch it off
                shown = "llm-max-cost" if name == "max_cost" else name.replace('_', '-')
                raise ConfigError(f"{shown} must be a positive finite number, not {value}")
        self._check_ranges()
        if self.root_mode not in (None, *ROOT_MODES):
            raise ConfigError(f"root: choose one of {', '.join(ROOT_MODES)}, not {self.root_mode!r}")
        if not self.trains_root() and not get_space(self.space).uniform:
            raise ConfigError(f"--root none needs a space with a uniform distribution (--space nb201): in the "
                              f"{self.space} space every architecture is a modification of the root")
        if self.prescreen < 0:
            raise ConfigError(f"prescreen must be 0 (off) or a number of candidates, not {self.prescreen}")
        self.check_repair()
        schedule_of(self)  # a ConfigError for an unknown method, eta < 2 or min-epochs out of range
        if self.pruner is not None:
            self.check_pruner()
        self.budget()
        if self.objectives:
            self.check_objectives()

    def check_warm_start(self, space) -> None:
        value = self.warm_start
        if value in (None, 0):
            self.warm_start = None
            return
        if value == ALL:
            if not space.uniform:
                raise ConfigError(f"--warm-start all scores the whole space, and the {space.name} space is not "
                                  f"finite; give a number of mutations of the root, e.g. --warm-start 100")
            return
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MOST_INT:
            raise ConfigError(f"warm-start: a number of architectures to score (at least 1) or all, not {value!r}")

    def check_pruner(self) -> None:
        if self.fidelity:
            raise ConfigError("pruner= stops a Python objective's trial by what it reports; --fidelity trains "
                              "architectures at rungs instead: choose one")
        if not self.custom_objectives:
            raise ConfigError("a pruner judges what a Python objective reports (arch.report); the runtime's own "
                              "training is pruned by --fidelity successive-halving or hyperband")
        self.pruner_object()

    def check_objectives(self) -> None:
        """Known names (a registered evaluator or the Python API's objective function may
        produce others), and pymoo when there are several; a table has no latency."""
        objectives = parse_objectives(self.objectives)
        self.objectives = [str(o) for o in objectives]
        if not self.custom_objectives:
            check_known(objectives)
        if self.evaluator and not self.custom_objectives and any(o.name == "latency" for o in objectives):
            raise ConfigError("objective latency is measured after training, and a tabular evaluator trains "
                              "nothing; choose valid_acc, params or flops")
        require_pymoo(objectives)

    @property
    def custom_objectives(self) -> bool:
        """Whether the values come from a user's evaluator (any names allowed)."""
        kind = (self.evaluator or "").partition(":")[0]
        return kind == "python" or evaluator_factory(kind) is not None

    def check_repair(self) -> None:
        if self.repair is not None and self.repair not in REPAIR_MODES:
            raise ConfigError(f"repair: choose one of {', '.join(REPAIR_MODES)}, not {self.repair!r}")
        if self.effective_repair() != "off" and not getattr(get_strategy(self.strategy), "block_repairs", False):
            takers = ", ".join(n for n, s in STRATEGIES.items() if getattr(s, "block_repairs", False))
            raise ConfigError(f"--repair {self.repair}: the {self.strategy} strategy writes no block with an LLM "
                              f"(repairs apply to {takers}); leave --repair out or give off")
        if self.effective_repair() != "off" and self.space != "language":
            raise ConfigError(f"--repair {self.repair}: the {self.space} space's cells are not blocks the compiler "
                              "repairs; leave --repair out or give off")

    def _check_ranges(self) -> None:
        """Integers a flag or TOML may set past what SQLite, numpy's seeding or a machine takes."""
        for name in ("trials", "max_invalid", "workers", "epochs", "threads", "max_params", "max_flops", "max_tokens",
                     "trials_per_gpu", "prescreen", "eta", "min_epochs", "seed", "seeds", "depths"):
            lo, hi = INT_RANGES.get(name, (-MOST_INT, MOST_INT))
            value = getattr(self, name)
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                if item is not None and isinstance(item, int) and not lo <= item <= hi:
                    raise ConfigError(f"{name.replace('_', '-')} must be between {lo} and {hi:,}, not {item}")

    def check_evaluator(self) -> None:
        kind, sep, path = self.evaluator.partition(":")
        if kind == "training" and not sep:
            self.evaluator = None
            return
        if self.custom_objectives:  # the Python API's objective function, or a registered evaluator
            return
        if not sep or not path or kind not in (*KINDS, TABLE_KIND):
            raise ConfigError(f"evaluator: expected training, nats-bench:PATH, nas-bench-201:PATH or table:PATH, "
                              f"not {self.evaluator!r}")
        check_table_map(self.table_map)
        if self.dataset not in TABULAR_DATASETS:
            what = "a derived table" if kind == TABLE_KIND else f"the {kind} benchmark"
            raise ConfigError(f"--evaluator {kind}: {what} has no {self.dataset} results; choose --dataset "
                              f"{', '.join(TABULAR_DATASETS)}")


# ---------------------------------------------------------------------- TOML and merging


def merge(*layers: Optional[dict]) -> SearchConfig:
    """A config from layers of settings; later layers win. Strategy options merge key by key
    while the strategy stays the same; a layer naming the root by path reads its text."""
    values: dict = {}
    for layer in layers:
        if not layer:
            continue
        layer = {k: v for k, v in layer.items() if v is not None}
        if isinstance(layer.get("time_limit"), str):  # "sim:N" (a flag or TOML value) sets the simulated limit
            layer.update(_time_limit_fields(layer.pop("time_limit")))
        if "root" in layer and "root_text" not in layer:
            layer["root_text"] = read_root(layer["root"])
        if "strategy" in layer and layer["strategy"] != values.get("strategy"):
            values.pop("strategy_options", None)
        for key, value in layer.items():
            if key == "strategy_options":
                values[key] = {**values.get(key, {}), **value}
            else:
                values[key] = value
    return _space_defaults(SearchConfig.from_record(values))


def _space_defaults(config: SearchConfig) -> SearchConfig:
    """A cell space brings its skeleton and, when no root is given, its root (NB201's ResNet cell);
    a root given as a NAS-Bench-201 string becomes its architecture."""
    space = SPACES.get(config.space)
    config.resolve()
    if space is None or space.name == "language":
        return config
    if space.skeleton is not None and config.skeleton == SearchConfig.skeleton:
        config.skeleton = space.skeleton
    if config.root_text is None:
        config.root_text = space.default_root()
    else:
        try:
            config.root_text = space.root_text(config.root_text)
        except nb201.NotInSpace as exc:
            raise ConfigError(f"the root architecture {config.root or ''}: {exc}") from None
    return config


def differences(stored: dict, current: dict) -> List[str]:
    """`key: stored -> current` for every identity entry that differs."""
    out = []
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key), current.get(key)
        if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
            out.append(f"{key}: {_short(a)} -> {_short(b)}")
    return out


def _short(v) -> str:
    text = json.dumps(v, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
