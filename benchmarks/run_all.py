"""Run every `benchmarks/*_bench.py` and `strategies.py` in turn (what `make bench` calls).

Each benchmark is a script that prints its own summary line(s) and exits 0;
this runner prints a header per script and reports scripts that failed.
Extra arguments are passed to every script. Exit status: 0 when all ran, 1
when any failed.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OTHERS = ("strategies.py", "repair.py")  # benchmarks named after what they compare rather than `*_bench.py`


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("*_bench.py")) + [HERE / name for name in OTHERS]
    if not scripts:
        print("no benchmarks found")
        return 0
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(script), *argv], cwd=HERE.parent)
        print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
        if done.returncode != 0:
            failed.append(f"{script.name} (exit {done.returncode})")
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
