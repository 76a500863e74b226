"""Table mode of `benchmarks/strategies.py`: the offline strategies on a NAS-Bench-201 table under
the benchmarks' protocol (see that script's docstring). Not a benchmark of its own."""
from __future__ import annotations

import importlib.util
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

KINDS = {".csv": "table", ".json": "table", ".pbz2": "nats-bench", ".pth": "nas-bench-201"}


def evaluator_spec(path: Path) -> str:
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise SystemExit(f"error: --table {path}: expected .csv or .json (a derived table), .pickle.pbz2 (NATS-Bench) "
                         f"or .pth (NAS-Bench-201)")
    return f"{kind}:{path.resolve()}"


def best_by_validation(trials):
    """The test accuracy of the trial best by validation accuracy (earliest on ties), or None."""
    ok = [r for r in trials if r["status"] == "ok" and r["valid_acc"] is not None]
    if not ok:
        return None
    return max(ok, key=lambda r: (r["valid_acc"], -r["arch_id"]))["test_acc"]


def trials_of(run_dir: Path):
    """The run's trials in the order they were evaluated (one at a time: the order of their ids)."""
    conn = sqlite3.connect(run_dir / "runs.sqlite")
    try:
        rows = conn.execute("SELECT arch_id, status, valid_acc, test_acc, seconds FROM archs WHERE status IN "
                            "('ok', 'failed', 'diverged') ORDER BY arch_id").fetchall()
    finally:
        conn.close()
    return [dict(zip(("arch_id", "status", "valid_acc", "test_acc", "seconds"), r)) for r in rows]


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


def table_main(args, offline, checkpoints, budgets) -> int:
    from nader.search import run_search
    from nader.search.strategies import STRATEGIES

    if (args.space or "nb201") != "nb201":
        print("error: table mode searches the nb201 space (--space nb201)", file=sys.stderr)
        return 2
    spec = evaluator_spec(Path(args.table))
    dataset = args.dataset or "cifar10"
    seeds = [int(s) for s in (args.seeds or ",".join(map(str, range(10)))).split(",")]
    names = [n.strip() for n in (args.strategies or ",".join(offline)).split(",") if n.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        print(f"error: unknown strategies {', '.join(unknown)}", file=sys.stderr)
        return 2
    budget = args.sim_budget or budgets.get(dataset)
    trials = max(checkpoints)
    base = Path(args.run_dir) if args.run_dir else Path(tempfile.mkdtemp(prefix="nader-strategies-table-"))
    table_map = dict(p.split("=", 1) for p in args.table_map.split(",")) if args.table_map else {}
    common = {"space": "nb201", "dataset": dataset, "evaluator": spec, "preset": "nb201-12", "seeds": [777],
              **({"table_map": table_map} if table_map else {})}
    optimum = table_optimum(Path(args.table), table_map, dataset, "test_acc@200")
    signal_optimum = table_optimum(Path(args.table), table_map, f"{dataset}-valid" if dataset == "cifar10" else dataset,
                                   "valid_acc@12")
    t0 = time.perf_counter()
    rows, notes, has_times = [], [], True
    for name in names:
        if name == "optuna" and importlib.util.find_spec("optuna") is None:
            notes.append("optuna: skipped: optuna is not installed (pip install 'nader-toolchain[optuna]')")
            continue
        options = {"population": 10, "sample_size": 3} if name == "rea" else {}
        at, at_budget, budget_trials, hits, signal_hits = {n: [] for n in checkpoints}, [], [], 0, 0
        for seed in seeds:
            run = base / f"{name}-seed{seed}"
            s = run_search({**common, "strategy": name, "strategy_options": options, "seed": seed, "trials": trials,
                            "run_dir": str(run)})
            if s.trials < trials:
                notes.append(f"{name} seed {seed}: stopped after {s.trials} trials: {s.stop.message}")
            done = trials_of(run)
            has_times = has_times and all(r["seconds"] for r in done if r["status"] == "ok")
            for n in checkpoints:
                at[n].append(best_by_validation(done[:n]))
            hits += optimum is not None and found(done, "test_acc", optimum)
            signal_hits += signal_optimum is not None and found(done, "valid_acc", signal_optimum)
            if budget and has_times:
                run = base / f"{name}-seed{seed}-sim"
                s = run_search({**common, "strategy": name, "strategy_options": options, "seed": seed,
                                "trials": 100000, "time_limit": f"sim:{budget:g}", "run_dir": str(run)})
                done = trials_of(run)
                at_budget.append(best_by_validation(done))
                budget_trials.append(len(done))
        rows.append((name, len(seeds), [mean_std(at[n]) for n in checkpoints],
                     mean_std(at_budget) if at_budget else "-",
                     f"{statistics.mean(budget_trials):.0f}" if budget_trials else "-",
                     f"{hits}/{len(seeds)}" if optimum is not None else "-",
                     f"{signal_hits}/{len(seeds)}" if signal_optimum is not None else "-"))
    print(f"search strategies on {Path(args.table).name} ({spec.split(':')[0]}), nb201 space, {dataset}, "
          f"signal: 12-epoch validation accuracy; figure: test accuracy of the best by it "
          f"(mean ± std over seeds {','.join(map(str, seeds))}; {time.perf_counter() - t0:.0f} s)")
    sim = f"@ sim {budget:g} s" if budget and has_times else "@ sim budget"
    header = ["strategy", "seeds", *(f"@ {n} trials" for n in checkpoints), sim, "trials in budget",
              f"optimum in {trials}", f"signal's optimum in {trials}"]
    table = [header] + [[name, str(k), *cps, b, bt, hit, shit] for name, k, cps, b, bt, hit, shit in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if not has_times:
        print("  the table has no per-epoch times: no simulated-time budget")
    if optimum is not None:
        print(f"  optimum in {trials}: seeds whose run evaluated the table's best cell ({optimum:.2f} % after 200 "
              f"epochs) within {trials} trials")
    if signal_optimum is not None:
        print(f"  signal's optimum in {trials}: seeds whose run evaluated the cell best by the signal "
              f"({signal_optimum:.2f} % after 12 epochs)")
    for note in notes:
        print(f"  {note}")
    if not args.run_dir:
        shutil.rmtree(base, ignore_errors=True)
    return 0
