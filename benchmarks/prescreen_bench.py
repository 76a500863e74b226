"""How well the zero-cost proxies rank architectures: Spearman correlation with trained accuracy.

A random mutation walk (`nader.search.run_search`, strategy `walk`, in process) from
examples/resnet_basic.nad trains ``--archs`` distinct architectures on digits with the quick
preset (default 32); every one that trained successfully is then scored by every proxy of
`nader.search.proxies` as the search scores it (`nader.search.proxy_scorer`: the compiler's
network at the proxies' fixed small settings, seeded from the architecture's hash; digits'
images are built in, so the proxies that read images run too), and the Spearman rank correlation
of each proxy with the validation accuracy is printed, with its p-value, beside the time a proxy
takes per architecture against one training. NAS-Bench-201's tables: `proxies_bench.py`.

    python benchmarks/prescreen_bench.py [--archs 32] [--depths 1,1,1] [--run-dir DIR]

With ``--run-dir`` the search is kept and resumed, so a rerun only recomputes the proxies.
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


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archs", type=int, default=32, help="architectures to train (at least 30 for the figure)")
    ap.add_argument("--depths", default="1,1,1", help="blocks per stage (NB201's is 5,5,5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run-dir", default=None)
    args = ap.parse_args(argv)
    depths = [int(d) for d in args.depths.split(",")]

    from scipy.stats import spearmanr

    from nader.search import run_search
    from nader.search.proxies import all_proxies
    from nader.search.proxy_scorer import ProxyScorer

    tmp = None if args.run_dir else tempfile.TemporaryDirectory()
    run_dir = args.run_dir or tmp.name
    try:
        t0 = time.perf_counter()
        summary = run_search({"root": str(EXAMPLE), "strategy": "walk", "dataset": "digits", "preset": "quick",
                              "trials": args.archs, "depths": depths, "seed": args.seed, "run_dir": run_dir})
        search_s = time.perf_counter() - t0
        from nader.search.records import records
        from nader.search.store import RunReader

        with RunReader(run_dir) as reader:
            trained = [r for r in records(reader) if r["status"] == "ok"]
    finally:
        if tmp is not None:
            tmp.cleanup()
    accs = [r["valid_acc"] for r in trained]
    train_s = statistics.median(r["seconds"] for r in trained)
    lines = []
    for proxy in all_proxies():
        scorer = ProxyScorer(proxy, skeleton="nb201", dataset="digits")
        if all_proxies()[proxy].data:
            scorer.batch()  # the images are read once, not counted per architecture
        scores = scorer.scores([(r["hash"], r["text"]) for r in trained])[proxy]
        per = scorer.seconds / max(1, scorer.evaluated)
        low = min((s for s in scores if s is not None), default=0.0) - 1.0
        rho, p = spearmanr([low if s is None else s for s in scores], accs)
        lines.append(f"  {proxy:<9} Spearman {rho:+.3f} (p = {p:.3g}); {per * 1000:.0f} ms per architecture "
                     f"({per / train_s * 100:.1f}% of a training)")
    spread = f"valid accuracy {min(accs):.1f}..{max(accs):.1f}%"
    print(f"prescreen: zero-cost proxies against trained validation accuracy on {len(trained)} digits architectures "
          f"(random mutation walk, quick preset, depths {depths}, {spread}; median training {train_s:.1f} s; "
          f"search {search_s:.0f} s{', resumed' if summary.resumed else ''})")
    print("\n".join(lines))
    if len(trained) < 30:
        print(f"  (only {len(trained)} architectures trained successfully; the figure asks for at least 30)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
