"""The search loop's own cost per trial, training excluded, against one trial's training.

The real loop (strategy, mutation, verification, deduplication, width fit, and the
transactional records in a fresh run directory's SQLite store, fsync included) runs for
``--trials`` trials from examples/resnet_basic.nad on digits, with an evaluator that answers at
once (defined here, labelled: no training; its accuracy is a hash of the architecture, so REA
has something to select on). Every proposal is a new mutant: the parse and shape caches see
unseen blocks, as in a real search. Rejected proposals (duplicates, invalid, over budget) are
part of the cost and counted. The figure is wall time per trained architecture; the target is
<= 10 ms. Beside it, one quick-preset trial on digits trained in this process (the runtime,
the same network as the root).

    python benchmarks/search_overhead_bench.py [--trials 200] [--strategy rea]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nader.search.loop import Observer

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "resnet_basic.nad"


class InstantEvaluator:
    """Benchmark stand-in for training (no training at all): valid accuracy is a hash of the text."""

    capacity = 1

    def __init__(self):
        self.queue = []

    def submit(self, trial):
        self.queue.append(trial)

    def pending(self):
        return len(self.queue)

    def idle(self):
        return 0 if self.queue else 1

    def wait(self, timeout=None):
        from nader.search.evaluator import SeedOutcome

        out = []
        for t in self.queue:
            acc = 50 + int(hashlib.sha256(t.text.encode()).hexdigest()[:4], 16) % 5000 / 100
            out += [SeedOutcome(t.arch_id, s, "ok", valid_acc=acc, test_acc=acc, seconds=0.0) for s in t.seeds]
        self.queue = []
        return out

    def close(self, abort=False):
        pass


class Clock(Observer):
    """Per-trial wall and CPU times: from one trial's submission to the next one's."""

    def __init__(self):
        self.times, self.cpu = [], []
        self.last = None

    def submitted(self, node):
        now = (time.perf_counter(), time.process_time())
        if self.last is not None:
            self.times.append(now[0] - self.last[0])
            self.cpu.append(now[1] - self.last[1])
        self.last = now


def loop_overhead(trials: int, strategy: str):
    from nader.search.config import merge
    from nader.search.loop import SearchLoop
    from nader.search.store import SearchStore
    from nader.search.strategies import get_strategy

    with tempfile.TemporaryDirectory() as tmp:
        cfg = merge({"root": str(EXAMPLE), "strategy": strategy, "trials": trials + 1, "run_dir": tmp})
        cfg.check()
        store = SearchStore(tmp)
        clock = Clock()
        loop = SearchLoop(cfg, store, InstantEvaluator(), get_strategy(strategy)(**cfg.strategy_options),
                          observer=clock)
        t0 = time.perf_counter()
        stop = loop.run()
        total = time.perf_counter() - t0
        counts = {}
        for n in loop.tree:
            counts[n.status] = counts.get(n.status, 0) + 1
        store.close()
    return clock, total, stop, counts


def one_training() -> float:
    from nader.compiler.network import BUILDER
    from nader.runtime.jobs import Job, run_job

    job = Job(arch=EXAMPLE.read_text(), dataset="digits", preset="quick", builder=BUILDER)
    run_job(job)  # warm: imports, dataset, deterministic-mode set-up, as in a running search
    t0 = time.perf_counter()
    result = run_job(job)
    assert result.status == "ok", result.error
    return time.perf_counter() - t0


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--strategy", default="rea")
    ap.add_argument("--no-training", action="store_true", help="skip the training comparison")
    args = ap.parse_args(argv)
    clock, total, stop, counts = loop_overhead(args.trials, args.strategy)
    times = clock.times
    med, mean = statistics.median(times) * 1000, statistics.mean(times) * 1000
    cpu = statistics.median(clock.cpu) * 1000
    p90 = sorted(times)[int(0.9 * (len(times) - 1))] * 1000
    rejected = sum(v for k, v in counts.items() if k in ("invalid", "duplicate", "over-budget"))
    verdict = "met" if med <= 10 else "NOT met"
    train = None if args.no_training else one_training()
    versus = f"; one quick-preset digits trial trains in {train:.1f} s ({mean / 10 / train:.3f}% of it)" if train else ""
    load = os.getloadavg()[0]
    print(f"search overhead: {med:.1f} ms per trial median, {mean:.1f} mean, {p90:.1f} p90, {cpu:.1f} ms CPU median "
          f"({args.strategy}, {len(times)} trials after the first, {rejected} rejected proposals included; propose, "
          f"verify, deduplicate, fit, record) - target 10 ms {verdict}{versus}; load average {load:.1f} on "
          f"{os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
