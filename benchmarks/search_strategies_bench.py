"""Random search against regularized evolution at equal trials on digits, over several seeds.

Each (strategy, seed) is a real search (`nader.search.run_search`, in process) from
examples/resnet_basic.nad on digits with the quick preset: ``--trials`` trained architectures,
the root included. REA's population and tournament are scaled to the trial count
(``--population``, ``--sample-size``; the defaults 20/5 would leave REA random for its first 20
trials). Prints, per strategy, the mean and standard deviation over seeds of the best validation
accuracy (what the search selects on) and the test accuracy of that architecture (reported,
never used to choose).

    python benchmarks/search_strategies_bench.py [--trials 16] [--seeds 0,1,2] [--depths 1,1,1]

Runs are kept under ``--run-dir`` (default: a temporary folder); rerunning with the same folder
resumes and retrains nothing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "resnet_basic.nad"


def run(strategy: str, seed: int, args, base: Path):
    from nader.search import run_search

    options = {"population": args.population, "sample_size": args.sample_size} if strategy == "rea" else {}
    summary = run_search({"root": str(EXAMPLE), "strategy": strategy, "strategy_options": options,
                          "dataset": "digits", "preset": "quick", "trials": args.trials, "seed": seed,
                          "depths": args.depths, "threads": args.threads,
                          "run_dir": str(base / f"{strategy}-seed{seed}")})
    return summary.best["valid_acc"], summary.best["test_acc"]


def mean_std(values):
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=16)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--depths", default="1,1,1", help="blocks per stage (NB201's is 5,5,5)")
    ap.add_argument("--population", type=int, default=8)
    ap.add_argument("--sample-size", type=int, default=4)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--run-dir", default=None)
    args = ap.parse_args(argv)
    args.depths = [int(d) for d in args.depths.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    tmp = None if args.run_dir else tempfile.TemporaryDirectory()
    base = Path(args.run_dir or tmp.name)
    t0 = time.perf_counter()
    lines = []
    try:
        for strategy in ("random", "rea"):
            results = [run(strategy, seed, args, base) for seed in seeds]
            vm, vs = mean_std([v for v, _ in results])
            tm, ts = mean_std([t for _, t in results])
            per_seed = ", ".join(f"{v:.2f}" for v, _ in results)
            lines.append(f"  {strategy:<6} best valid {vm:.2f} ± {vs:.2f}  (test of it {tm:.2f} ± {ts:.2f}; "
                         f"per seed {per_seed})")
    finally:
        if tmp is not None:
            tmp.cleanup()
    rea_label = f"REA population {args.population}, sample {args.sample_size}"
    print(f"search strategies: random vs REA, {args.trials} trials each, {len(seeds)} seeds, digits quick preset, "
          f"depths {args.depths}, {rea_label} ({time.perf_counter() - t0:.0f} s)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
