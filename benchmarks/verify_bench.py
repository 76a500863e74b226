"""Verification throughput over the compatibility corpus, in blocks per second.

Each round parses every block of the corpus (../shared/nader-compat: blocks/*.txt and the
fail2success log) and verifies it symbolically, for all sizes: structure checks, shape
inference, constraints and size limits. Target: 10x NADER's published checker, about 770
blocks/s on this 2-core machine for its regex-and-one-sample-size check, so 7,700 blocks/s.
Prints one line. Parsed lines are interned (see nader.dsl.parser); "cold" rounds clear
that cache first, and the expression/size caches of the symbolic algebra too.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from nader.compiler.passes import symbolic, verify_program
from nader.dsl.parser import parse, parse_line

NADER_BLOCKS_PER_S = 770
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import corpus, shared_dir  # noqa: E402


def load() -> list[tuple[str, int]]:
    shared = shared_dir()
    return [] if shared is None else [(text, stride) for _, text, stride in corpus(shared / "nader-compat")]


def clear_caches() -> None:
    parse_line.cache_clear()
    for fn in (symbolic._add, symbolic._mul, symbolic._scale, symbolic.exact_quotient,
               symbolic._rounded_div):
        fn.cache_clear()


def run(texts, rounds: int, cold: bool) -> tuple[float, int]:
    blocks = 0
    elapsed = 0.0
    for _ in range(rounds):
        if cold:
            clear_caches()
        start = time.perf_counter()
        for text, stride in texts:
            reports, _ = verify_program(parse(text), stem_stride=stride)
            blocks += len(reports)
        elapsed += time.perf_counter() - start
    return blocks / elapsed, blocks // rounds


def main() -> int:
    texts = load()
    if not texts:
        print("verify: skipped (../shared/nader-compat not found)")
        return 0
    run(texts, 1, cold=False)  # warm up imports
    steady, n = run(texts, 20, cold=False)
    cold, _ = run(texts, 5, cold=True)
    target = 10 * NADER_BLOCKS_PER_S
    verdict = "meets" if steady >= target else "MISSES"
    print(f"verify: {steady:,.0f} blocks/s steady, {cold:,.0f} blocks/s cold ({n} blocks); "
          f"{steady / NADER_BLOCKS_PER_S:.1f}x NADER's ~{NADER_BLOCKS_PER_S} blocks/s; {verdict} the {target:,} target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
