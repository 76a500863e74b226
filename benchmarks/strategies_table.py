"""Table mode of `benchmarks/strategies.py`: the offline strategies on NAS-Bench-201 tables under
the benchmarks' protocol, with and without a zero-cost warm start (see that script's docstring).
Not a benchmark of its own."""
from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

KINDS = {".csv": "table", ".json": "table", ".pbz2": "nats-bench", ".pth": "nas-bench-201"}
REPO = Path(__file__).resolve().parents[1]
# The development tables (../shared/nb201, GENIUS's files: the 200-epoch schedule only); CIFAR-10's is held out.
DEV_TABLES = {"cifar100": "genius_nasbench201_cifar100.json", "imagenet16-120": "genius_nasbench201_imagenet.json"}


def evaluator_spec(path: Path) -> str:
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise SystemExit(f"error: --table {path}: expected .csv or .json (a derived table), .pickle.pbz2 (NATS-Bench) "
                         f"or .pth (NAS-Bench-201)")
    return f"{kind}:{path.resolve()}"


def best_of(trials):
    """The trial best by validation accuracy (earliest on ties), or None."""
    ok = [r for r in trials if r["status"] == "ok" and r["valid_acc"] is not None]
    return max(ok, key=lambda r: (r["valid_acc"], -r["arch_id"])) if ok else None


def best_by_validation(trials):
    """The test accuracy of the trial best by validation accuracy (earliest on ties), or None."""
    best = best_of(trials)
    return best["test_acc"] if best else None


def trials_of(run_dir: Path):
    """The run's trials in the order they were evaluated (one at a time: the order of their ids)."""
    conn = sqlite3.connect(run_dir / "runs.sqlite")
    try:
        rows = conn.execute("SELECT arch_id, status, valid_acc, test_acc, seconds, created FROM archs WHERE status IN "
                            "('ok', 'failed', 'diverged') ORDER BY arch_id").fetchall()
    finally:
        conn.close()
    return [dict(zip(("arch_id", "status", "valid_acc", "test_acc", "seconds", "created"), r)) for r in rows]


def table_optimum(path: Path, table_map: dict, dataset: str, metric: str):
    """The best value of `metric` (``test_acc@200``, ``valid_acc@12``) in a derived table (None for
    other files, or without that column): what "found the optimum" compares against."""
    if KINDS.get(path.suffix.lower()) != "table":
        return None
    from nader.search.tables.derived import FileTable
    from nader.search.tables.base import TableError

    table = FileTable(path, table_map)
    best = None
    for cell, row in table.rows.items():
        try:
            value = table.value(row, cell, metric, dataset)
        except TableError:
            continue
        best = value if best is None else max(best, value)
    return best


def found(trials, key: str, optimum) -> bool:
    """Whether the trials evaluated the table's optimum (its string; an isomorphic string
    evaluated first makes it a duplicate, not found)."""
    return any(r[key] is not None and abs(r[key] - optimum) < 1e-9 for r in trials)


def mean_std(values) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def per_trial(trials, at: int):
    """Seconds between consecutive trials' records around trial `at` (the loop's cost per trial:
    the strategy's decision, the checks, a table lookup), the mean over up to 5 intervals; None
    when the run is shorter."""
    times = [r["created"] for r in trials]
    gaps = [b - a for a, b in zip(times, times[1:])][max(0, at - 6):at - 1]
    return statistics.mean(gaps) if gaps else None


def variants_of(args):
    """(label, extra settings) per variant: with --prescreen N, prescreened by --proxy (no warm start);
    then without a warm start and with each --warm-start size."""
    sizes = [s.strip() for s in str(args.warm_start or "0").split(",") if s.strip()]
    out = [(f"prescreen {args.prescreen} {args.proxy}", {"warm_start": 0, "prescreen": args.prescreen,
                                                         "proxy": args.proxy})] if args.prescreen else []
    for size in sizes:
        if size in ("0", "off", "none"):
            out.append(("-", {"warm_start": 0}))  # said explicitly: `auto` would choose one
        else:
            out.append((f"{args.proxy} {size}", {"warm_start": "all" if size == "all" else int(size),
                                                 "proxy": args.proxy}))
    return out


def tables_of(args):
    """(path, dataset) pairs: --table with --dataset, or --dev's two development tables."""
    if args.dev:
        shared = Path(os.environ.get("NADER_SHARED") or REPO.parent / "shared") / "nb201"
        missing = [name for name in DEV_TABLES.values() if not (shared / name).is_file()]
        if missing:
            raise SystemExit(f"error: --dev reads {shared}/{', '.join(missing)}, which is not here (set NADER_SHARED)")
        return [(shared / name, dataset) for dataset, name in DEV_TABLES.items()]
    return [(Path(args.table), args.dataset or "cifar10")]


def table_main(args, offline, checkpoints, budgets) -> int:
    from nader.runtime.presets import get_preset
    from nader.search.strategies import STRATEGIES

    if (args.space or "nb201") != "nb201":
        print("error: table mode searches the nb201 space (--space nb201)", file=sys.stderr)
        return 2
    seeds = [int(s) for s in (args.seeds or ",".join(map(str, range(10)))).split(",")]
    names = [n.strip() for n in (args.strategies or ",".join(offline)).split(",") if n.strip()]
    unknown = [n for n in names if n not in STRATEGIES and n != "auto"]
    if unknown:
        print(f"error: unknown strategies {', '.join(unknown)}", file=sys.stderr)
        return 2
    preset = args.preset or ("nb201" if args.dev else "nb201-12")
    epochs = args.epochs or get_preset(preset).epochs
    base = Path(args.run_dir) if args.run_dir else Path(tempfile.mkdtemp(prefix="nader-strategies-table-"))
    cache = Path(args.proxy_cache) if args.proxy_cache else base / "proxy-cache.sqlite"  # shared by every run
    table_map = dict(p.split("=", 1) for p in args.table_map.split(",")) if args.table_map else {}
    for path, dataset in tables_of(args):
        code = _one_table(args, path, dataset, preset, epochs, table_map, seeds, names, checkpoints, budgets, base,
                          cache)
        if code:
            return code
    if not args.run_dir:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def _one_table(args, path, dataset, preset, epochs, table_map, seeds, names, checkpoints, budgets, base, cache):
    from nader.search import run_search

    spec = evaluator_spec(path)
    budget = args.sim_budget or budgets.get(dataset)
    trials = max(checkpoints)
    common = {"space": "nb201", "dataset": dataset, "evaluator": spec, "preset": preset, "seeds": [777],
              "proxy_cache": str(cache), **({"epochs": args.epochs} if args.epochs else {}),
              **({"table_map": table_map} if table_map else {})}
    signal_set = f"{dataset}-valid" if dataset == "cifar10" else dataset
    optimum = table_optimum(path, table_map, dataset, "test_acc@200")
    signal_optimum = table_optimum(path, table_map, signal_set, f"valid_acc@{epochs}")
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    rows, notes, has_times = [], [], True
    for name in names:
        if name == "optuna" and importlib.util.find_spec("optuna") is None:
            notes.append("optuna: skipped: optuna is not installed (pip install 'nader-toolchain[optuna]')")
            continue
        options = {"population": 10, "sample_size": 3} if name == "rea" else {}
        for label, extra in variants_of(args):
            tag = f"{name}-seed{{}}" + ("" if not extra.get("warm_start") else
                                        f"-warm{extra['warm_start']}-{extra['proxy']}") + (
                f"-prescreen{extra['prescreen']}-{extra['proxy']}" if extra.get("prescreen") else "")
            at = {n: [] for n in checkpoints}
            regret = {n: [] for n in checkpoints}
            hits = {n: 0 for n in checkpoints}
            at_budget, budget_trials, optimum_hits, proxy_s, computed, wall, cost = [], [], 0, [], [], [], {}
            for seed in seeds:
                run = base / dataset / tag.format(seed)
                start = time.perf_counter()
                s = run_search({**common, **extra, "strategy": name, "strategy_options": options, "seed": seed,
                                "trials": trials, "run_dir": str(run)})
                wall.append(time.perf_counter() - start)
                if s.trials < trials:
                    notes.append(f"{name} {label} seed {seed}: stopped after {s.trials} trials: {s.stop.message}")
                if s.proxies:
                    proxy_s.append(s.proxies["seconds"])
                    computed.append(s.proxies["computed"])
                done = trials_of(run)
                has_times = has_times and all(r["seconds"] for r in done if r["status"] == "ok")
                for n in checkpoints:
                    best = best_of(done[:n])
                    at[n].append(best["test_acc"] if best else None)
                    if signal_optimum is not None and best is not None:
                        regret[n].append(signal_optimum - best["valid_acc"])
                        hits[n] += found(done[:n], "valid_acc", signal_optimum)
                for n in (10, trials):
                    gap = per_trial(done, n)
                    if gap is not None:
                        cost.setdefault(n, []).append(gap)
                optimum_hits += optimum is not None and found(done, "test_acc", optimum)
                if budget and has_times:
                    run = base / dataset / (tag.format(seed) + "-sim")
                    s = run_search({**common, **extra, "strategy": name, "strategy_options": options, "seed": seed,
                                    "trials": 100000, "time_limit": f"sim:{budget:g}", "run_dir": str(run)})
                    done = trials_of(run)
                    at_budget.append(best_by_validation(done))
                    budget_trials.append(len(done))
            rows.append({"name": name, "variant": label, "seeds": len(seeds), "at": at, "regret": regret, "hits": hits,
                         "budget": mean_std(at_budget) if at_budget else "-",
                         "budget_trials": f"{statistics.mean(budget_trials):.0f}" if budget_trials else "-",
                         "optimum": f"{optimum_hits}/{len(seeds)}" if optimum is not None else "-",
                         "proxy": (max(proxy_s), statistics.mean(proxy_s), max(computed)) if proxy_s else None,
                         "wall": statistics.mean(wall), "cost": {n: statistics.mean(v) for n, v in cost.items()}})
    _print(args, path, spec, dataset, preset, epochs, seeds, rows, checkpoints, trials, optimum, signal_optimum,
           budget, has_times, notes, time.perf_counter() - t0, load0)
    return 0


def _print(args, path, spec, dataset, preset, epochs, seeds, rows, checkpoints, trials, optimum, signal_optimum,
           budget, has_times, notes, seconds, load0):
    print(f"search strategies on {path.name} ({spec.split(':')[0]}), nb201 space, {dataset}, preset {preset}: "
          f"signal: the {epochs}-epoch validation accuracy; figure: the test accuracy of the cell best by it, "
          f"mean ± std over seeds {','.join(map(str, seeds))} ({seconds:.0f} s; load average {load0:.1f} at the "
          f"start, {os.getloadavg()[0]:.1f} at the end)")
    if signal_optimum is not None:
        print(f"  regret: the table's best {epochs}-epoch validation accuracy ({signal_optimum:.2f} %) minus the best "
              f"found (mean over seeds); found: seeds that evaluated the cell best by validation")
    header = ["strategy", "warm start", "queries", "test", "regret", "found"]
    table = [header]
    for r in rows:
        for n in checkpoints:
            regret = f"{statistics.mean(r['regret'][n]):.2f}" if r["regret"][n] else "-"
            hits = f"{r['hits'][n]}/{r['seeds']}" if signal_optimum is not None else "-"
            table.append([r["name"], r["variant"], str(n), mean_std(r["at"][n]), regret, hits])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print("  time (wall, this machine; proxies apart from queries):")
    for r in rows:
        proxy = "no proxy"
        if r["proxy"]:
            first, mean, computed = r["proxy"]
            proxy = (f"proxy {first:.1f} s for the first seed ({computed:,} scores computed), {mean:.1f} s per seed "
                     f"on average (the cache is shared across seeds)")
        cost = ", ".join(f"{v * 1000:.0f} ms a trial near trial {n}" for n, v in sorted(r["cost"].items()))
        print(f"    {r['name']} ({r['variant']}): {r['wall']:.1f} s a seed; {cost}; {proxy}")
    if budget and has_times:
        print(f"  at a simulated budget of {budget:g} s: " + "; ".join(
            f"{r['name']} ({r['variant']}) {r['budget']} in {r['budget_trials']} trials" for r in rows))
    elif not has_times:
        print("  the table has no per-epoch times: no simulated-time budget")
    if optimum is not None:
        print(f"  seeds whose {trials} trials evaluated the cell best by test accuracy ({optimum:.2f} %): " + "; ".join(
            f"{r['name']} ({r['variant']}) {r['optimum']}" for r in rows))
    for note in notes:
        print(f"  {note}")
