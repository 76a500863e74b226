"""`Study.optimize(objective, n_trials, n_jobs=K)` against the sequential run, on threads, worker
processes and a local Ray cluster: the speed-up, and each executor's overhead per trial.

The objective sleeps (`--sleep` seconds) and scores a NAS-Bench-201 cell, so the figure is the
API's own cost (proposing, checking and recording each trial; shipping the objective; the
workers), not training's, and it holds on a busy machine: a sleeping trial needs no core. The
ideal parallel time is trials x sleep / K; the overhead is what each run took beyond it, per
trial and as a share of the ideal, which is how Ray Tune's scalability page states its own:
10,000 one-second trials on one 16-CPU node took 715.27 s against a 625 s minimum, 14% more
(https://docs.ray.io/en/latest/tune/tutorials/tune-scalability.html).

Processes are started by each `optimize` (their start-up is in the figure, shown apart as the
first result's delay); Ray's local cluster is started once (`ray.init`, shown apart), and its
workers are warmed by one round of K trials before the measured run, as a cluster's are.

    python benchmarks/study_parallel_bench.py [--trials 16] [--jobs 4] [--sleep 1.0]
                                              [--executors sequential,thread,process,ray]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


class Sleeper:
    def __init__(self, seconds: float, t0: float):
        self.seconds, self.t0 = seconds, t0

    def __call__(self, arch):
        time.sleep(self.seconds)
        return 10.0 * arch.cell.count("conv") + arch.number / 1000


def run(folder: Path, name: str, trials: int, jobs: int, sleep: float, executor) -> tuple:
    import nader.search as ns

    study = ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"], storage=str(folder / name),
                            strategy="random")
    first = []
    t0 = time.monotonic()
    summary = study.optimize(Sleeper(sleep, t0), n_trials=trials, n_jobs=1 if executor is None else jobs,
                             executor=executor, callbacks=[lambda s, t: first.append(time.monotonic() - t0)])
    seconds = time.monotonic() - t0
    assert summary.trials == trials and all(t.state == "ok" for t in study.trials), summary.stop
    return seconds, (first[0] - sleep) if first else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--executors", default="sequential,thread,process,ray")
    args = parser.parse_args(argv)
    executors = args.executors.split(",")
    ideal = args.trials * args.sleep / args.jobs
    load = os.getloadavg()[0]
    lines, base = [], None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in executors:
            note = ""
            kind = None if name == "sequential" else name
            if name == "ray":
                try:
                    import ray
                except ImportError:
                    lines.append("ray: not installed (pip install 'nader-toolchain[ray]')")
                    continue
                t0 = time.monotonic()
                ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
                started = time.monotonic() - t0
                run(folder, "ray-warm-up", args.jobs, args.jobs, 0.0, "ray")
                note = f", cluster start {started:.1f} s not counted"
            try:
                seconds, delay = run(folder, name, args.trials, args.jobs, args.sleep, kind)
            finally:
                if name == "ray":
                    ray.shutdown()
            if name == "sequential":
                base = seconds
                lines.append(f"sequential {seconds:.2f} s ({(seconds / (args.trials * args.sleep) - 1) * 100:+.1f}% "
                             f"over {args.trials * args.sleep:g} s)")
                continue
            speedup = f"x{base / seconds:.2f} of sequential, " if base else ""
            per_trial = (seconds - ideal) / args.trials
            lines.append(f"{name} {seconds:.2f} s ({speedup}{(seconds / ideal - 1) * 100:+.1f}% over the ideal "
                         f"{ideal:g} s, {per_trial * 1000:+.0f} ms per trial; first result after "
                         f"{delay:.2f} s of start-up{note})")
    print(f"study_parallel: {args.trials} trials sleeping {args.sleep:g} s, n_jobs={args.jobs}, load average "
          f"{load:.1f}: " + "; ".join(lines) + ". Ray Tune's published overhead: +14.4% (10,000 1-s trials, 16 CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
