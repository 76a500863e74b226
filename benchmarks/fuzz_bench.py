"""Fuzzing `nadc` at length: mutated block files through verify, --emit torch and --emit onnx.

The suite runs a few of these cases (tests/test_fuzz.py); this runs many, from a seed, with the
same mutations and checks (tests/fuzzing.py): the example files of the repository damaged by
characters, lines, huge numbers, Unicode, cycles, large fan-in, many nodes and long lines. A case
fails on an exit status other than 0, 1 or 2, an internal error, emitted torch source that does
not compile, or a command without an answer within the hang guard.

    .venv/bin/python benchmarks/fuzz_bench.py --cases 2000 --seed 1

Prints one summary line (cases, internal errors, other failures, the slowest case and its time, after a
warm-up run that imports torch and onnx),
then each failure with its mutations and the first lines of its report; `--keep DIR` writes the
failing cases there. Exits 0.
"""
from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fuzzing import check_case, mutate, seed_files  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-s", type=int, default=120, help="seconds a command may take before it counts as a hang")
    parser.add_argument("--keep", type=Path, default=None, help="write the failing cases to this folder")
    args = parser.parse_args()

    seeds = seed_files()
    rng = random.Random(args.seed)
    failures, kinds = [], collections.Counter()
    slowest = (0.0, None, None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.nad"
        warm.write_bytes(seeds[0].read_bytes())
        check_case(warm, args.hang_s)  # imports torch and onnx: not counted in any case's time
        for case in range(args.cases):
            origin = rng.choice(seeds)
            text, mutations = mutate(origin.read_bytes().decode("utf-8", "surrogateescape"), rng)
            path = Path(tmp) / f"case{case}.nad"
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
            outcome = check_case(path, args.hang_s)
            if outcome.seconds > slowest[0]:
                slowest = (outcome.seconds, case, mutations)
            if outcome.failures:
                failures.append((case, origin, mutations, outcome.failures))
                for failure in outcome.failures:
                    kinds["internal error" if "internal error" in failure else "traceback" if "raised" in failure
                          else "other"] += 1
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / path.name).write_text(text, encoding="utf-8", errors="surrogateescape")
            path.unlink()
    elapsed = time.perf_counter() - started
    print(f"fuzz: {args.cases} cases (seed {args.seed}), {len(failures)} failing: {kinds['internal error']} internal "
          f"errors, {kinds['traceback']} tracebacks, {kinds['other']} other; slowest case {slowest[1]} "
          f"({'+'.join(slowest[2] or ())}) {slowest[0]:.2f} s; {elapsed:.0f} s in all")
    for case, origin, mutations, problems in failures[:30]:
        print(f"  case {case} from {origin.relative_to(ROOT)} ({'+'.join(mutations)}):")
        for problem in problems:
            print(f"    {problem}")


if __name__ == "__main__":
    main()
