"""The predictor strategy's sensitivity to each of its settings, on the two development tables.

`--strategy predictor` has a few settings (`initial`, `radius`, `alpha`, `model`, `acquisition`,
and the `--proxy` and `--warm-start` it reads). Its defaults were chosen on the development tables
(../shared/nb201: GENIUS's CIFAR-100 and ImageNet16-120 files; CIFAR-10's is held out), so this
script shows how much each one matters: the defaults, then each setting changed alone, every
variant over the same seeds, with the validation regret (the table's best validation accuracy
minus the best found, mean over seeds) and the seeds that evaluated the best-validation cell after
10, 20, 50 and 100 queries. Every run is a real search (`run_search`, in process) answered by the
table; every run shares one proxy cache file, so the space is scored once.

    python benchmarks/predictor_knobs.py [--seeds 0,...,9] [--queries 100] [--proxy-cache FILE]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from strategies_table import DEV_TABLES, REPO, best_of, evaluator_spec, found, table_optimum, trials_of  # noqa: E402

CHECKPOINTS = (10, 20, 50, 100)
#: (label, strategy options, other settings): the defaults first, then one change each
VARIANTS = (
    ("defaults", {}, {}),
    ("initial=3", {"initial": 3}, {}),
    ("initial=8", {"initial": 8}, {}),
    ("radius=1", {"radius": 1}, {}),
    ("radius=3", {"radius": 3}, {}),
    ("alpha=0.3", {"alpha": 0.3}, {}),
    ("alpha=3", {"alpha": 3.0}, {}),
    ("model=ensemble", {"model": "ensemble"}, {}),
    ("ensemble, ei", {"model": "ensemble", "acquisition": "ei"}, {}),
    ("model=bayes", {"model": "bayes"}, {}),
    ("bayes, ei", {"model": "bayes", "acquisition": "ei"}, {}),
    ("gp, ei", {"model": "gp", "acquisition": "ei"}, {}),
    ("proxy=synflow+zen", {}, {"proxy": "synflow+zen"}),
    ("proxy=params", {}, {"proxy": "params"}),
    ("warm-start=1000", {}, {"warm_start": 1000}),
    ("warm-start=0", {}, {"warm_start": 0}),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default=",".join(map(str, range(10))))
    parser.add_argument("--queries", type=int, default=max(CHECKPOINTS))
    parser.add_argument("--variants", help="labels to run, comma-separated (default: all)")
    parser.add_argument("--proxy-cache", help="a proxy cache file shared by every run (default: one in the run folder)")
    parser.add_argument("--run-dir", help="keep the runs here (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    shared = Path(os.environ.get("NADER_SHARED") or REPO.parent / "shared") / "nb201"
    if not all((shared / name).is_file() for name in DEV_TABLES.values()):
        print(f"error: the development tables are not in {shared} (set NADER_SHARED)", file=sys.stderr)
        return 2
    from nader.search import run_search

    seeds = [int(s) for s in args.seeds.split(",")]
    wanted = set(args.variants.split(",")) if args.variants else None
    base = Path(args.run_dir or tempfile.mkdtemp(prefix="nader-predictor-knobs-"))
    cache = args.proxy_cache or str(base / "proxy-cache.sqlite")
    checkpoints = [n for n in CHECKPOINTS if n <= args.queries]
    for dataset, name in DEV_TABLES.items():
        path = shared / name
        optimum = table_optimum(path, {}, dataset, "valid_acc@200")
        t0, load0 = time.perf_counter(), os.getloadavg()[0]
        print(f"predictor on {name} ({dataset}, the 200-epoch validation accuracy; best {optimum:.2f} %), seeds "
              f"{args.seeds}: regret (mean over seeds) and seeds that found the best-validation cell")
        print("  " + "variant".ljust(20) + "".join(f"@{n}".ljust(14) for n in checkpoints) + "proxy s/seed")
        for label, options, extra in VARIANTS:
            if wanted and label not in wanted:
                continue
            regret = {n: [] for n in checkpoints}
            hits = {n: 0 for n in checkpoints}
            proxy = []
            for seed in seeds:
                run = base / dataset / f"{label}-seed{seed}"
                s = run_search({"space": "nb201", "dataset": dataset, "evaluator": evaluator_spec(path),
                                "preset": "nb201", "seeds": [777], "proxy_cache": cache, "warm_start": "all",
                                "strategy": "predictor", "strategy_options": options, "seed": seed,
                                "trials": args.queries, "run_dir": str(run), **extra})
                proxy.append(s.proxies["seconds"] if s.proxies else 0.0)
                done = trials_of(run)
                for n in checkpoints:
                    best = best_of(done[:n])
                    regret[n].append(optimum - best["valid_acc"] if best else optimum)
                    hits[n] += found(done[:n], "valid_acc", optimum)
            cells = "".join(f"{statistics.mean(regret[n]):.2f} {hits[n]}/{len(seeds)}".ljust(14) for n in checkpoints)
            print("  " + label.ljust(20) + cells + f"{statistics.mean(proxy):.1f}", flush=True)
        print(f"  ({time.perf_counter() - t0:.0f} s; load average {load0:.1f} at the start, "
              f"{os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
