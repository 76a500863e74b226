"""Cost of one mutation (`nader.compiler.mutate.mutate`): propose, rewrite, verify, re-check the architecture.

Every call sees a parent it has not seen before, as the search loop does:
* **tree**: 200 mutations grown from examples/resnet_basic.nad as the `random` strategy grows its
  tree: each parent is drawn uniformly from the example and every mutant so far;
* **corpus**: every architecture of ../shared/nader-compat/blocks (NAS-Bench-201 and ImageNet-style
  bases, DARTS normal cells of ~60 nodes), 5 mutations each from its own seed.
A mutation parses and verifies the parent architecture, picks an operator and a site, rewrites and
verifies the base block, prints the whole architecture and loads it again. Prints one line with the
median and 90th percentile per call, against the issue's 10 ms budget for the loop's whole
per-trial overhead (propose, verify, deduplicate, fit). Processes are warm (imports done); the
caches of the parser and the shape rules fill as they would in a run.
"""
from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

from nader.compiler.mutate import CannotApply, mutate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ROOT, shared_dir  # noqa: E402

BUDGET_MS = 10.0


def timed(text: str, rng: random.Random) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        result = mutate(text, rng).arch_text
    except CannotApply:
        result = text
    return (time.perf_counter() - start) * 1000, result


def tree(steps: int) -> list[float]:
    archs, rng, times = [(ROOT / "examples" / "resnet_basic.nad").read_text(encoding="utf-8")], random.Random(0), []
    for _ in range(steps):
        ms, text = timed(rng.choice(archs), rng)
        times.append(ms)
        archs.append(text)
    return times


def corpus(per_file: int) -> list[float]:
    shared = shared_dir()
    if shared is None:
        return []
    times = []
    for path in sorted((shared / "nader-compat" / "blocks").glob("*.txt")):
        text, rng = path.read_text(encoding="utf-8"), random.Random(path.name)
        for _ in range(per_file):
            times.append(timed(text, rng)[0])
    return times


def summary(times: list[float]) -> str:
    p90 = statistics.quantiles(times, n=10)[-1]
    return f"median {statistics.median(times):.1f} ms, p90 {p90:.1f} ms over {len(times)}"


def main() -> int:
    mutate((ROOT / "examples" / "resnet_basic.nad").read_text(encoding="utf-8"), random.Random(1))  # imports
    line = [f"mutate: tree {summary(tree(200))}"]
    times = corpus(5)
    line.append(f"corpus {summary(times)}" if times else "corpus skipped (../shared/nader-compat not found)")
    print("; ".join(line) + f" (the loop's whole per-trial budget is {BUDGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
