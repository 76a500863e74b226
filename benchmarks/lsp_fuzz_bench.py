"""`nadc lsp` against a hostile client at length: 10,000 hostile messages to one server.

The cases and checks are tests/lsp_hostile.py's, which tests/test_lsp_fuzz.py runs a few hundred of:
broken framing (lengths that are not numbers, too large, too short or too long, LF-only or
lowercase headers, header lines that are not headers, bodies that are not UTF-8 JSON), envelopes
that are not JSON-RPC requests, requests out of the lifecycle or for unknown methods, every method's
params missing, null, of the wrong types, with negative or huge positions, documents the server
must not read (a FIFO, /dev/zero, /dev/stdin, a folder, a missing file), rename's names that are no
node ids, and notifications with all of these; each followed by a sentinel request.

    .venv/bin/python benchmarks/lsp_fuzz_bench.py --cases 10000 --seed 1

Prints one summary line: cases, requests among them, crashes (the server exited or stopped
answering), unanswered requests, wrong answers (another code than the spec's for the class, an
internal error, an id answered twice, a traceback on stderr), the server's peak resident memory
(VmHWM) after the first 500 cases and at the end, and the time; then its resident memory (VmRSS)
every 2,000 cases, the count of each class of input and the first problems. Target: 0 crashes, 0 unanswered, 0 wrong, the peak memory flat after the
warm-up. Exits 0; without the `lsp` extra (pygls) it says so.
"""
from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from lsp_hostile import Generator, Report, drive, start  # noqa: E402


def memory_mib(pid: int, field: str = "VmHWM") -> float:
    """The process's peak (VmHWM) or current (VmRSS) resident memory, in MiB (Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=500, help="cases before the first memory reading")
    parser.add_argument("--every", type=int, default=2000, help="cases between two readings of the resident memory")
    args = parser.parse_args()
    if importlib.util.find_spec("pygls") is None:
        print("lsp fuzz: skipped - the `lsp` extra (pygls) is not installed")
        return
    with tempfile.TemporaryDirectory() as folder:
        wire, docs = start(Path(folder))
        generator = Generator(random.Random(args.seed), docs)
        report = Report()
        began = time.perf_counter()
        cpu = time.process_time()
        done, resident, warm = 0, [], float("nan")
        while done < args.cases and wire.process.poll() is None:
            step = min(args.warmup if not done else args.every, args.cases - done)
            drive(wire, [generator.case() for _ in range(step)], report)
            done += step
            resident.append((done, memory_mib(wire.process.pid, "VmRSS")))
            if done == step:
                warm = memory_mib(wire.process.pid)
        alive = wire.process.poll() is None
        peak = memory_mib(wire.process.pid) if alive else float("nan")
        seconds = time.perf_counter() - began
        exit_code = wire.stop() if alive else wire.process.returncode
    report.problems = list(dict.fromkeys(report.problems))  # each run of `drive` looks at the whole log
    crashes = (0 if alive else 1) + sum(p.startswith("unanswered sentinel") for p in report.problems)
    unanswered = sum(p.startswith("unanswered:") or " answered 0 times" in p for p in report.problems)
    wrong = len(report.problems) - crashes - unanswered
    print(f"lsp fuzz: {report.cases:,} hostile messages ({report.requests:,} requests), {crashes} crashes, "
          f"{unanswered} unanswered, {wrong} wrong answers; peak RSS {warm:.0f} MiB after {args.warmup} "
          f"cases, {peak:.0f} MiB at the end; {seconds:.1f} s ({1000 * seconds / max(report.cases, 1):.2f} ms a "
          f"message with its sentinel; this process {time.process_time() - cpu:.1f} s CPU); "
          f"shutdown+exit: {exit_code}")
    print("  resident memory after " + ", ".join(f"{n:,} cases {mib:.0f} MiB" for n, mib in resident))
    print("  classes: " + ", ".join(f"{k} {n:,}" for k, n in sorted(report.kinds.items())))
    for problem in report.problems[:20]:
        print("  " + problem[:300])


if __name__ == "__main__":
    main()
