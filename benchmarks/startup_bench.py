"""Start-up time of the command lines, from process start to exit, optionally side by side with
another checkout.

Commands (each a fresh process, nothing cached in it; bytecode as installed code has it):
* `nadc verify examples/resnet_basic.nad` (one block; the first figure of issue 31's "no slower")
* `nadc --help`
* `nader-search --help` (it imports every command's module to print their short help)
* `nader-search run --help` (it lists every strategy with its options)

`--against DIR` (a virtual environment's bin folder, e.g. `/work/main/.venv/bin`) runs the same
commands with that checkout's `nadc` and `nader-search` too, alternating A B A B so both sides see
the same machine, and prints the ratio of the medians (this tree / the other). The block verified
is this tree's file for both sides. Figures: median wall time and median CPU time (user + system,
the child's own accounting) over `--runs` runs after one warm-up each; CPU time moves less than
wall time on a shared machine. Prints one summary line first. Exits 0.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BLOCK = ROOT / "examples" / "resnet_basic.nad"
#: Child processes run as installed code does: with bytecode (pip compiles it on install).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
COMMANDS = {
    "nadc verify": ("nadc", "verify", str(BLOCK)),
    "nadc --help": ("nadc", "--help"),
    "nader-search --help": ("nader-search", "--help"),
    "nader-search run --help": ("nader-search", "run", "--help"),
}


def timed(argv: list) -> tuple:
    """(wall seconds, CPU seconds) of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(sides: dict, runs: int) -> dict:
    """{(command, side): [(wall, cpu), ...]}, the sides alternating run by run."""
    out = {}
    for name, (tool, *args) in COMMANDS.items():
        argvs = {side: [str(Path(bin_dir) / tool), *args] for side, bin_dir in sides.items()}
        for argv in argvs.values():  # warm-up: the page cache and bytecode
            timed(argv)
        for _ in range(runs):
            for side, argv in argvs.items():
                out.setdefault((name, side), []).append(timed(argv))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="counted runs per command and side (default 9)")
    parser.add_argument("--bin", default=str(Path(sys.executable).parent),
                        help="this tree's bin folder (default: this Python's)")
    parser.add_argument("--against", default=None, metavar="DIR",
                        help="another checkout's bin folder (with nadc and nader-search) to run side by side")
    args = parser.parse_args()
    sides = {"this": args.bin}
    if args.against:
        missing = [t for t in ("nadc", "nader-search") if not (Path(args.against) / t).exists()]
        if missing:
            print(f"startup: {args.against} has no {', '.join(missing)}; nothing measured")
            return 0
        sides["other"] = args.against
    results = measure(sides, max(1, args.runs))
    rows, summary = [], []
    for name in COMMANDS:
        row = {}
        for side in sides:
            walls, cpus = zip(*results[(name, side)])
            row[side] = (statistics.median(walls), statistics.median(cpus))
        rows.append((name, row))
        this = row["this"]
        if "other" in row:
            ratio = this[1] / row["other"][1] if row["other"][1] else float("nan")
            summary.append(f"{name} {this[1] * 1000:.0f} ms CPU ({ratio:.2f}x)")
        else:
            summary.append(f"{name} {this[1] * 1000:.0f} ms CPU")
    against = f", ratio to {args.against}" if args.against else ""
    print(f"startup: {'; '.join(summary)} (median of {args.runs}{against})")
    print(f"load average {os.getloadavg()[0]:.1f}; this: {sides['this']}" +
          (f"; other: {sides['other']}" if "other" in sides else ""))
    header = f"{'command':<26}{'wall ms':>9}{'CPU ms':>9}"
    if "other" in sides:
        header += f"{'other wall':>12}{'other CPU':>11}{'CPU ratio':>11}{'wall ratio':>12}"
    print(header)
    for name, row in rows:
        line = f"{name:<26}{row['this'][0] * 1000:>9.0f}{row['this'][1] * 1000:>9.0f}"
        if "other" in row:
            o = row["other"]
            line += (f"{o[0] * 1000:>12.0f}{o[1] * 1000:>11.0f}{row['this'][1] / o[1]:>11.2f}"
                     f"{row['this'][0] / o[0]:>12.2f}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
