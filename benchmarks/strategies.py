"""Search strategies compared at equal trial counts over several seeds: the random mutation walk,
REA, REA with successive halving (rea-sh), NADER, FairNAD and GENIUS (when this checkout has it)
on one evaluator; with ``--table``, the offline strategies on NAS-Bench-201's cell space under the
benchmarks' protocol.

Each (strategy, seed) is a real search (`nader.search.run_search`, in process) from ``--from``
(examples/resnet_basic.nad) with ``--trials`` trials, the root included. Without an evaluator
file it trains on digits with the quick preset (``--dataset``, ``--preset``, ``--depths``);
``--evaluator nats-bench:PATH`` answers trials from a tabular benchmark instead, where the
search supports it. Prints, per strategy, the best validation accuracy found after a few trial
counts and the test accuracy of that architecture (reported, never used to choose): the mean and
sample standard deviation over seeds. It writes every run's HTML report (``RUN/report.html``)
and one page with every run's best-so-far curve (``strategies.html``, as
``nader-search report RUN1 RUN2 ...`` writes it).

The LLM strategies need a model: ``--llm-base-url URL --llm-model M`` (or ``--llm-config``), or
``--replay DIR`` where ``DIR/<strategy>-seed<N>`` are run directories of an earlier benchmark
that answer every call (docs/llm.md); NADER and FairNAD also need ``--kb DIR``. A benchmark
never fakes an LLM: without one, those strategies are listed as skipped with the reason.

    python benchmarks/strategies.py [--trials 8] [--seeds 0,1] [--strategies walk,rea,nader,fairnad,genius]
    python benchmarks/strategies.py --table FILE --space nb201 [--seeds 0,...,9] [--sim-budget 20000]
    python benchmarks/strategies.py --dev [--warm-start 0,1000 --proxy synflow] [--prescreen 20] [--seeds 0,...,9]

**Table mode** (``--table FILE``: a derived ``.csv``/``.json`` table, a NATS-Bench ``.pickle.pbz2``
or a NAS-Bench-201 ``.pth``; ``benchmarks/nb201_synthetic.py`` writes a synthetic one; ``--dev``:
both development tables of ../shared/nb201, GENIUS's CIFAR-100 and ImageNet16-120 files) runs
random search, REA, local search, Optuna's TPE (``optuna``, when optuna is installed), the
predictor (``predictor``), ``auto`` (the default strategy: what it chooses), the walk and the tree
strategy (``--strategies``) over the nb201 space with one seed per trial (777). The
search's signal is the validation accuracy at ``--epochs`` or the ``--preset``'s epochs
(``nb201-12`` by default, the benchmarks' 12-epoch signal; ``--dev`` uses ``nb201``, the 200-epoch
schedule, the only one GENIUS's tables have), and the output names it. The figure printed is the
test accuracy of the architecture best by that signal (200 epochs where the table has them), mean
± sample standard deviation over the seeds (10 by default), after 10, 20, 50, 100 and 300 queries
(one run of 300 trials each), with, for a derived table, the validation regret (the table's best
validation accuracy minus the best found, the mean over seeds) and how many seeds evaluated the
cell best by validation by then; and, where the table has times, at a simulated-time budget (a
second run with ``--time-limit sim:B``; B defaults to NATS-Bench's for the dataset: 20,000 s on
CIFAR-10). ``--warm-start 0,1000`` runs every strategy without and with a zero-cost warm start of
1,000 cells scored by ``--proxy`` (synflow by default; ``all``: the whole space; ``0`` is given as
``--warm-start 0``, so ``auto`` too runs without one); ``--prescreen K`` adds, for each strategy,
a run prescreened by ``--proxy`` (K candidates scored a trial, the best trained), the baseline to
beat; ``--checkpoints 10,50`` reports those query counts and runs only as long as the largest; every run
shares one proxy cache file (``--proxy-cache``, by default one in the run folder), so the space is
scored once for all seeds and strategies. The time each run took, the loop's cost per trial near
trials 10 and 300 and the proxies' time (apart from the queries) are printed too.
REA uses NATS-Bench's settings (population 10, tournament 3). Random, REA, local and optuna start
without a root trial (``--root none``, their default in the cell space), as the published
baselines do; walk and tree train the ResNet root first.

REA's population and tournament are scaled to the trial count (half the trials, half of that);
FairNAD's stages keep the paper's 8:8:4 ratio and chains of 2 but shrink so that one round fits
the trials when fewer than 21. Runs are kept under ``--run-dir`` (default: a new temporary
folder, printed); rerunning with the same folder resumes and retrains nothing.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "resnet_basic.nad"
ALL = ("walk", "rea", "rea-sh", "nader", "fairnad", "genius")
# table mode (optuna: Optuna's TPE; auto: `--strategy auto`, the default, which chooses its own warm start)
OFFLINE = ("random", "rea", "local", "optuna", "predictor", "auto", "walk", "tree")
CHECKPOINTS = (10, 20, 50, 100, 300)
# NATS-Bench's time budgets for the topology space (exps/NATS-algos/run-all.sh; docs/nb201.md)
SIM_BUDGETS = {"cifar10": 20000, "cifar100": 40000, "imagenet16-120": 120000}
# name -> (strategy, extra settings): "rea-sh" is REA with successive halving (docs/search.md,
# Multi-fidelity); its trials cost less training (most stop at the lowest rung)
VARIANTS = {"rea-sh": ("rea", {"fidelity": "successive-halving"})}


def strategy_options(name: str, cls, args) -> dict:
    trials = args.trials
    if name == "rea":
        population = max(2, trials // 2)
        return {"population": population, "sample_size": max(1, population // 2)}
    options = {}
    if name == "fairnad" and trials - 1 < 20:
        n = max(3, trials - 1)
        fair = pareto = max(1, round(n * 0.4))
        options.update(fair=fair, pareto=pareto, iterative=max(1, n - fair - pareto))
    if "kb" in cls.options and args.kb:
        options["kb"] = str(Path(args.kb).resolve())
    for flag in ("llm_base_url", "llm_model", "llm_config"):
        if getattr(args, flag) and flag in cls.options:
            options[flag] = getattr(args, flag)
    return options


def skipped(name: str, cls, args) -> str | None:
    """Why a strategy cannot run here, or None."""
    if cls is None:
        return "not in this checkout's strategies (search/strategies/__init__.py)"
    if "llm_base_url" in cls.options:
        if not (args.llm_base_url or args.llm_config or args.replay):
            return "no LLM: give --llm-base-url and --llm-model (or --llm-config), or --replay DIR; a benchmark never fakes one"
        if "kb" in cls.options and not args.kb:
            return "needs a knowledge base: --kb DIR (fill it with `nader-search read` or `nader-search kb import`)"
    return None


def run_one(name: str, cls, seed: int, args, base: Path):
    from nader.search import run_search

    run_dir = base / f"{name}-seed{seed}"
    name, extra = VARIANTS.get(name, (name, {}))
    options = strategy_options(name, cls, args)
    if args.replay and "replay" in cls.options:
        recorded = Path(args.replay) / f"{name}-seed{seed}"
        if not (recorded / "runs.sqlite").exists():
            return None, f"no recorded run {recorded} to replay"
        options["replay"] = str(recorded.resolve())
    settings = {"root": str(args.root), "strategy": name, "strategy_options": options, "dataset": args.dataset,
                "preset": args.preset, "trials": args.trials, "seed": seed, "depths": args.depths,
                "threads": args.threads, "run_dir": str(run_dir), **extra}
    if args.epochs:
        settings["epochs"] = args.epochs
    if args.train_limit:
        settings["train_options"] = {"train_limit": args.train_limit, "eval_limit": args.train_limit}
    if args.evaluator:
        settings["evaluator"] = args.evaluator
    summary = run_search(settings)
    return summary, None


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--seeds", default=None, help="[default: 0,1; table mode 0,...,9]")
    ap.add_argument("--strategies", default=None, help=f"[default: {','.join(ALL)}; table mode {','.join(OFFLINE)}]")
    ap.add_argument("--from", dest="root", default=str(EXAMPLE))
    ap.add_argument("--dataset", default=None, help="[default: digits; table mode cifar10]")
    ap.add_argument("--preset", default=None, help="[default: quick; table mode nb201-12, --dev nb201]")
    ap.add_argument("--depths", default="1,1,1", help="blocks per stage (NB201's is 5,5,5)")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--train-limit", type=int, default=None, help="cap the training and evaluation images (smoke runs)")
    ap.add_argument("--evaluator", default=None, help="nats-bench:PATH or nas-bench-201:PATH (a tabular benchmark)")
    ap.add_argument("--kb", default=None)
    ap.add_argument("--llm-base-url", dest="llm_base_url", default=None)
    ap.add_argument("--llm-model", dest="llm_model", default=None)
    ap.add_argument("--llm-config", dest="llm_config", default=None)
    ap.add_argument("--replay", default=None, help="a folder of recorded runs, DIR/<strategy>-seed<N>")
    ap.add_argument("--run-dir", default=None)
    ap.add_argument("--table", default=None, help="table mode: a derived table or benchmark file (see above)")
    ap.add_argument("--space", default=None, help="table mode: nb201 (the only space with tables)")
    ap.add_argument("--table-map", default=None, help="table mode: METRIC=COLUMN,... for a derived table")
    ap.add_argument("--sim-budget", type=float, default=None, help="table mode: simulated seconds [NATS-Bench's]")
    ap.add_argument("--dev", action="store_true", help="table mode on both development tables of ../shared/nb201")
    ap.add_argument("--warm-start", default="0", help="table mode: warm-start sizes to compare, e.g. 0,1000,all")
    ap.add_argument("--proxy", default="synflow", help="table mode: the warm start's proxy (or NAME+NAME)")
    ap.add_argument("--proxy-cache", default=None, help="table mode: the proxy cache file every run shares")
    ap.add_argument("--prescreen", type=int, default=0,
                    help="table mode: also run each strategy prescreened by --proxy (K candidates a trial)")
    ap.add_argument("--checkpoints", default=",".join(map(str, CHECKPOINTS)),
                    help="table mode: the query counts reported (the runs last the largest)")
    args = ap.parse_args(argv)
    if args.table or args.dev:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from strategies_table import table_main

        return table_main(args, OFFLINE, tuple(int(n) for n in args.checkpoints.split(",")), SIM_BUDGETS)
    args.seeds = args.seeds or "0,1"
    args.preset = args.preset or "quick"
    args.strategies = args.strategies or ",".join(ALL)
    args.dataset = args.dataset or "digits"
    from nader.search.config import SearchConfig
    from nader.search.report.cli import write_report
    from nader.search.report.compare import load_curves, text_table, write_compare
    from nader.search.strategies import STRATEGIES

    if args.evaluator and "evaluator" not in SearchConfig.__dataclass_fields__:
        print("error: this checkout's search has no tabular evaluator setting (--evaluator)", file=sys.stderr)
        return 2
    args.depths = [int(d) for d in args.depths.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    names = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = [n for n in names if n not in ALL and n not in STRATEGIES]
    if unknown:
        print(f"error: unknown strategies {', '.join(unknown)}", file=sys.stderr)
        return 2
    base = Path(args.run_dir) if args.run_dir else Path(tempfile.mkdtemp(prefix="nader-strategies-"))
    t0 = time.perf_counter()
    ran, notes, seconds = [], [], {}
    for name in names:
        cls = STRATEGIES.get(VARIANTS.get(name, (name,))[0])
        why = skipped(name, cls, args)
        if why:
            notes.append(f"{name}: skipped: {why}")
            continue
        start = time.perf_counter()
        for seed in seeds:
            summary, why = run_one(name, cls, seed, args, base)
            if summary is None:
                notes.append(f"{name} seed {seed}: skipped: {why}")
                continue
            if summary.trials < args.trials:
                notes.append(f"{name} seed {seed}: stopped after {summary.trials} trials: {summary.stop.message}")
            write_report(Path(summary.run_dir), Path(summary.run_dir) / "report.html", 10)
            ran.append(summary.run_dir)
        seconds[name] = time.perf_counter() - start
    where = args.evaluator or f"{args.dataset}, {args.preset} preset, depths {args.depths}"
    print(f"search strategies: {args.trials} trials each (root included), seeds {args.seeds}, {where} "
          f"({time.perf_counter() - t0:.0f} s: " + ", ".join(f"{n} {s:.0f} s" for n, s in seconds.items()) + ")")
    if ran:
        curves = load_curves(ran)
        print(text_table(curves))
        page = base / "strategies.html"
        write_compare(ran, page, title="Search strategies compared", notes=notes)
        print(f"curves: {page} (each run's report: {base}/<strategy>-seed<N>/report.html)")
    for note in notes:
        print(f"  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
