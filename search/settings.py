"""The search's settings, declared once: each `Setting` here is a flag of `nader-search run`, a key
of search.toml and a keyword of `create_study` at the same time (where it has them), with one
reader and one help text. The flags are made from this table (`search/cli.py`), the TOML reader
looks keys up in it (`config_file.py`), `create_study` checks its keywords with it (`study.py`),
and docs/search.md's option table is generated from it (`scripts/gen_docs.py`).

A setting's `field` is the `SearchConfig` field it sets; its default is the one `SearchConfig`
has (tests/test_settings.py compares them). The training settings are the runtime's
(`nader.runtime.options`), the LLM ones the agents' (`nader.agents.llm.options`), placed here.
Light on purpose: `nader-search run --help` imports it, not `config.py`.
"""
from __future__ import annotations

import math
import os
from typing import Dict

from nader.agents.knowledge.options import KB
from nader.agents.llm.options import LLM_MAX_COST, LLM_MAX_TOKENS, LLM_SETTINGS
from nader.inputs import InputError
from nader.inputs.settings import (MOST_INT, Choice, Count, Custom, Duration, Flag, IntList, Integer, Pairs, Path, Real,
                                   Setting, Text, by_keyword, by_toml, output_format)
from nader.runtime import options as runtime
from nader.runtime.errors import ConfigError

from .objectives import parse_objectives
from .proxies import members  # the package alone: its proxy modules load when a proxy is named, not for --help
from .pruners import PRUNERS, Pruner

DATASETS = runtime.DATASETS
# the proxies' names for --help, which imports no proxy module (tests compare them with nader.search.proxies)
PROXIES = ("flops", "grad_norm", "jacov", "naswot", "params", "snip", "synflow", "zen")
ROOT_MODES = ("train", "none")  # --root: the root is trial 1, or only where the tree hangs
SPACES = ("language", "nb201")
FIDELITIES = ("successive-halving", "hyperband")
#: the root architecture: nadc's default text limit
MAX_ROOT_BYTES = 1 << 20


def read_table_map(value) -> Dict[str, str]:
    """``metric=column,...`` (a flag) or a TOML table: which column of a table:PATH file holds a metric."""
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, str):
        pairs = []
        for part in value.split(","):
            if not part.strip():
                continue
            metric, sep, column = part.partition("=")
            if not sep or not metric.strip() or not column.strip():
                raise ValueError(f"expected METRIC=COLUMN,..., got {part.strip()!r}")
            pairs.append((metric, column))
    else:
        raise ValueError(f"expected METRIC=COLUMN,... or a table, got {value!r:.60}")
    return {str(k).strip(): str(v).strip() for k, v in pairs}


def read_proxy(value) -> str:
    """One proxy of nader.search.proxies, or several joined by + (an ensemble: ``synflow+zen``)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a proxy name, or several joined by +, got {value!r:.60}")
    try:
        return "+".join(members(value))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def read_warm_start(value):
    """`--warm-start`: a number of architectures to score before the first query, or ``all`` (the
    whole space); 0 is off. Returns the int or ``"all"``."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return "all"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MOST_INT:
        raise ValueError(f"expected a number of architectures (0: off) or all, got {str(value)[:40]!r}")
    return value  # 0 stays 0: off, said explicitly (`--strategy auto` would otherwise choose one)


def read_objectives(value) -> list:
    """``valid_acc:max,params:min`` (a flag) or a list (TOML, Python): the objectives as NAME:DIRECTION."""
    if not isinstance(value, (str, list, tuple)):
        raise ValueError(f"expected NAME:max|min,... or a list of them, got {value!r:.60}")
    try:
        return [str(o) for o in parse_objectives(value)]
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("objective: ")) from None


def read_pruner(value) -> dict:
    """A pruner's name, its spec ({"name": ..., parameters}) or a `Pruner` (docs/api.md, "Pruning"):
    the spec stored with the run. Its parameters are checked with the study's (`SearchConfig.check`)."""
    if isinstance(value, Pruner):
        return value.spec()
    spec = {"name": value} if isinstance(value, str) else value
    if not isinstance(spec, dict) or spec.get("name") not in PRUNERS:
        raise ValueError(f"expected one of {', '.join(PRUNERS)} or a Pruner, got {value!r:.60}")
    return dict(spec)


def read_jobs(value) -> int:
    """Objectives at once: a positive integer, or -1 for one per CPU (Optuna's spelling)."""
    if isinstance(value, bool) or not isinstance(value, int) or not (value == -1 or 1 <= value <= 4096):
        raise ValueError(f"expected a number of jobs from 1 to 4096, or -1 (one per CPU), got {value!r:.40}")
    return (os.cpu_count() or 1) if value == -1 else value


def read_resources(value) -> dict:
    """What each Ray task holds: Ray's names (num_cpus, num_gpus, memory) or a custom resource's,
    each a finite number of at least 0."""
    if not isinstance(value, dict) or not value:
        raise ValueError(f"expected a dict such as {{'num_gpus': 0.25}}, got {value!r:.60}")
    out = {}
    for key, amount in value.items():
        if not isinstance(key, str) or not key or len(key) > 128:
            raise ValueError(f"a resource's name is text, not {key!r:.40}")
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not 0 <= amount < math.inf:
            raise ValueError(f"{key}: expected a finite number of at least 0, got {amount!r:.40}")
        out[key] = amount
    return out


_RUN_CAPS = {LLM_MAX_COST.name: LLM_MAX_COST.but(field="max_cost", toml=True, old_toml=("max-cost",), keyword=True),
             LLM_MAX_TOKENS.name: LLM_MAX_TOKENS.but(field="max_tokens", toml=True, old_toml=("max-tokens",),
                                                     keyword=True)}

#: `nader-search run`'s settings, in --help's order; a TOML key or API keyword where they have one
RUN_SETTINGS = (
    Setting("--from", Path("file"), "The root architecture (.nad): the tree starts here; a new run needs one.",
            field="root", toml=True, keyword=True),
    Setting("--root", Choice(ROOT_MODES), field="root_mode", toml=True, keyword=True,
            shown_default="none for random, rea, local, optuna and predictor in --space nb201, else train",
            help="train: the root is trial 1; none: it is never trained and the first trials are the strategy's "
                 "own, as in published NAS-Bench-201 baselines."),
    Setting("--strategy", Text(), default="auto", toml=True, keyword=True,
            help="A strategy listed below, or auto: the recipe the benchmarks show best for the space, the budget "
                 "and the data (the predictor after a whole-space warm start in --space nb201, rea in the block "
                 "language); a cell-space run says what it chose."),
    Setting("--option", Pairs(), "A strategy option (repeatable), e.g. --option population=10.",
            name="strategy_options", toml="strategy-options", keyword="options", multiple=True),
    runtime.DATASET.but(help=(
        "All but digits are read from --data-dir; cifar10 and cifar10-valid both train NB201's cifar10-valid "
        "setting (25k/25k).")),
    runtime.DATA_DIR, runtime.PRESET, runtime.SEEDS,
    runtime.SKELETON.but(shown_default="nb201; the space's"),
    Setting("--space", Choice(SPACES), default="language", toml=True, keyword=True,
            help="Search space: language (any block) or nb201 (NAS-Bench-201's cells on its network; mutations "
                 "change one edge's operation)."),
    Setting("--evaluator", Text(), metavar="training|nats-bench:PATH|nas-bench-201:PATH|table:PATH", toml=True,
            keyword=True, shown_default="training (the API: python)",
            help="Answer trials from a tabular benchmark file instead of training (the user supplies the file; "
                 "table: a derived .csv or .json table; documentation page 'NAS-Bench-201'), or a registered "
                 "evaluator's NAME (documentation page 'The Python API')."),
    Setting("--table-map", Custom(read_table_map, "METRIC=COLUMN,...", "METRIC=COLUMN pairs, or a table"),
            toml=True, keyword=True, shown_default="columns named as the metrics",
            help="table: which columns hold the metrics, e.g. valid_acc@12=val_acc,test_acc@200=test_acc."),
    Setting("--depths", IntList(1, 10_000, example="5,5,5"), "Blocks per stage.", toml=True, keyword=True,
            shown_default="the skeleton's"),
    Setting("--objective", Custom(read_objectives, "NAME:max|min,...", "NAME:max|min, comma-separated or a list"),
            field="objectives", toml=True, keyword=True, shown_default="valid_acc:max",
            help="What the search optimises: valid_acc, params, flops, latency (ms on the training device); "
                 "several rank by non-domination (needs pymoo)."),
    Setting("--trials", Integer(1), "Architectures to train, the root included.", default=30, toml=True, keyword=True),
    Setting("--max-invalid", Integer(1), default=10, toml=True, keyword=True,
            help="Stop after this many invalid proposals in a row (the strategy wrote no valid architecture)."),
    Setting("--time-limit", Duration(sim=True), toml=True, keyword=True,
            help="Start no trial after this long (600, 10m, 2h); running ones finish. With a tabular evaluator, "
                 "sim:20000 counts the table's simulated training time instead."),
    runtime.EXECUTOR,
    runtime.WORKERS, runtime.ADDRESS,
    Setting("--run-dir", Path("dir"), toml=True, keyword="storage",
            shown_default="runs/<root>-<strategy>-<dataset>-seed<seed>",
            help="Run directory; the same command resumes."),
    Setting("--seed", Integer(*runtime.SEED_RANGE), "Seed of the search's decisions.", default=0, toml=True,
            keyword=True),
    Setting("--prescreen", Integer(0), default=0, toml=True, keyword=True, shown_default="0, off",
            help="Make K valid candidates per trial, train the best by a zero-cost proxy."),
    Setting("--proxy", Custom(read_proxy, "NAME[+NAME]...", "a proxy's name, or several joined by +"),
            default="synflow", toml=True, keyword=True,
            help=f"The zero-cost proxy of --prescreen and --warm-start: {', '.join(PROXIES)}, or several joined by + "
                 f"(an ensemble: the mean of their ranks); naswot, jacov, snip and grad_norm read images "
                 f"(--data-dir)."),
    Setting("--warm-start", Custom(read_warm_start, "N|all", "a number of architectures, or all"), toml=True,
            keyword=True, shown_default="0, off",
            help="Before the first trial, score N architectures by --proxy (cells drawn uniformly, or all of them; "
                 "in the block language, mutations of the root) and start the strategy from the best."),
    Setting("--proxy-cache", Path("file"), toml=True, keyword=True,
            help="A file of proxy scores shared by runs, read and filled besides the run's own store."),
    Setting("--max-params", Count(), "Parameter budget (e.g. 1.5M).", toml=True, keyword=True,
            shown_default="the budget preset"),
    Setting("--max-flops", Count(), "FLOPs budget (e.g. 0.2G).", toml=True, keyword=True,
            shown_default="the budget preset"),
    runtime.MAX_MEMORY.but(toml=True, keyword=True,
                           help="Training memory per trial (e.g. 6G; a number is MiB): a candidate whose training "
                                "step needs more is over budget."),
    runtime.EPOCHS,
    Setting("--fidelity", Choice(FIDELITIES), toml=True, keyword=True,
            shown_default="off, every trial at the full budget",
            help="Train new architectures briefly and promote the best 1/eta to longer budgets, up to the full one."),
    Setting("--eta", Integer(2), "--fidelity: promotion rate.", default=3, toml=True, keyword=True),
    Setting("--min-epochs", Integer(1), "--fidelity: the lowest rung's epochs.", toml=True, keyword=True,
            shown_default="the full budget / eta^2, rounded up"),
    runtime.THREADS, runtime.DEVICE, runtime.TRIAL_TIMEOUT, runtime.TRIALS_PER_GPU,
    KB.but(name="kb", required=False, envvar=None, help="nader, fairnad: the knowledge base directory (filled by "
                                                         "`nader-search read`)."),
    # the LLM strategies' options of the same names, and the caps on the whole run (SearchConfig's)
    *(_RUN_CAPS.get(s.name, s) for s in LLM_SETTINGS),
    Setting("--no-reader", Flag(), "nader ablation: candidate ideas drawn at random."),
    Setting("--no-proposer-ranking", Flag(), "nader ablation: take the most similar idea, no LLM ranking.",
            name="no_ranking"),
    Setting("--no-feedback", Flag(), "nader ablation: one Modifier round, no compiler feedback."),
    Setting("--no-experience", Flag(), "nader ablation: no Reflector lessons."),
    output_format("table", "json"),
    runtime.PROGRESS.but(help="stderr while searching: rich (a live display), plain (one line per finished trial, "
                              "for logs and batch jobs), off; auto: rich on a terminal, else plain."),
    Setting("--force", Flag(), "Continue a run directory's tree with changed settings."),
    runtime.BUILDER,
    Setting("--repair", Choice(("off", "suggest", "auto", "store")), flag_value="store", metavar="[off|suggest|auto]",
            toml=True, keyword=True, shown_default="auto for nader, fairnad, genius on blocks; else off",
            help="The compiler's repair of blocks the LLM writes (nader, fairnad, genius on blocks): auto takes the "
                 "repaired block and records it, suggest shows the LLM the fix in its feedback, off neither. "
                 "`--repair` alone (or `store`): if RUN/runs.sqlite is damaged, copy what can still be read into "
                 "RUN/runs.recovered.sqlite, say what was recovered and lost, and stop."),
)
#: Settings that only a file or the API gives: the `[train]` table (other preset overrides), and
#: the root as text (the API's `root` when it is a block's text or a cell string).
FILE_SETTINGS = (
    Setting(None, Pairs(), "Preset overrides other than the flags' (train_limit, lr, ...).", name="train_options",
            toml="train", keyword=True),
    Setting(None, Text(MAX_ROOT_BYTES), "The root architecture's text.", name="root_text", keyword=True),
    Setting(None, Real(positive=True), "Simulated seconds of a tabular benchmark (time-limit = \"sim:N\").",
            name="sim_time_limit", keyword=True),
    Setting(None, Custom(read_pruner, "NAME", "successive-halving, hyperband, median, or a Pruner"),
            "Stop a Python objective's trial early by what it reports (arch.report): successive-halving, hyperband "
            "(their rungs use eta, min_epochs, epochs), median, or a Pruner instance.", name="pruner", keyword=True,
            shown_default="none: reports are kept, no trial is stopped"),
)
#: `Study.optimize`'s own keywords (a session's, not the run's: never stored)
OPTIMIZE_SETTINGS = (
    Setting(None, Custom(read_jobs, "N", "a number of jobs, or -1 (one per CPU)"), "Objectives evaluated at once.",
            name="n_jobs", keyword=True, default=1),
    Setting(None, Choice(("thread", "process", "ray")), name="executor", keyword=True,
            shown_default="this thread for one job; threads for several; process with a trial_timeout",
            help="Where objectives run: threads, worker processes (the objective shipped with cloudpickle), "
                 "or Ray tasks."),
    Setting(None, Text(), "executor='ray': the cluster ('auto' or HOST:PORT); none starts a local instance.",
            name="address", keyword=True),
    Setting(None, Custom(read_resources, "DICT", "a dict of Ray resources"), name="resources", keyword=True,
            shown_default="{'num_cpus': 1}",
            help="executor='ray': what each trial's task holds (num_cpus, num_gpus, memory, custom resources)."),
)
SEARCH_SETTINGS = RUN_SETTINGS + FILE_SETTINGS
#: the settings by the keyword their flag arrives as (`BY_NAME["objectives"]`)
BY_NAME = {s.name: s for s in SEARCH_SETTINGS}
#: TOML key -> setting (old keys too; a key's underscores are read as dashes)
TOML_KEYS = by_toml(SEARCH_SETTINGS)
#: create_study's keyword -> setting
KEYWORDS = by_keyword(SEARCH_SETTINGS)
OPTIMIZE_KEYWORDS = by_keyword(OPTIMIZE_SETTINGS)


def read_keywords(given: dict, caller: str = "create_study", table: Dict = KEYWORDS) -> dict:
    """The API's keyword arguments as SearchConfig fields, each read by its setting (the reader
    its flag and TOML key use, so `max_params=float("nan")` is refused as `--max-params nan` is);
    None is "not given". ConfigError naming the keyword, or an unknown one."""
    out = {}
    for keyword, value in given.items():
        setting = table.get(keyword)
        if setting is None:
            raise ConfigError(f"{caller}: unknown setting {keyword}; known: {', '.join(sorted(table))}")
        if value is None:
            continue
        try:
            out[setting.field] = setting.read(value, keyword)
        except InputError as exc:
            raise ConfigError(str(exc)) from None
    return out


#: paths a TOML file gives relative to itself
PATH_FIELDS = ("root", "data_dir", "run_dir", "proxy_cache")
