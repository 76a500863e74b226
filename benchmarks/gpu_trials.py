"""Trials per GPU-hour: the pool executor running K NAS-Bench-201 trials at once on one device.

Used by train_bench.py. Every trial is the NB201 ResNet (C=16) built from block text, trained with
the ``nb201-12`` preset's optimiser and batch on ``cifar10-valid`` (25,000 training images an
epoch) read from a standard ``cifar-10-batches-py`` folder: the user's (``--data-dir``) or one
written with synthetic images (same format and size; accuracy is meaningless, speed is not).

Each trial runs ``epochs`` epochs (default 3), not 12: the first epoch pays the one-off costs
(CUDA context, cuDNN autotuning, ``torch.compile``) and the others give the steady epoch time.
The figures are projections from those measured times, labelled as such:

* one trial of N epochs = its set-up time (result seconds minus the epochs' seconds) + the first
  epoch + (N - 1) x the median steady epoch (evaluation is timed inside the last epoch);
* trials per GPU-hour at K = K x 3600 / (one trial's projected wall time, with K running at once);
* the full 200-epoch protocol for one network = the same projection at K = 1.

K = 1 is measured first; its epoch events carry the memory report from which the pool's own
rule (``nader.runtime.gpu_slots``) chooses K, and then K trials run together.
"""
from __future__ import annotations

import pickle
import statistics
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np


def write_synthetic_cifar10(root: Path, per_batch: int = 10_000, n_test: int = 10_000) -> Path:
    """A standard-format cifar-10-batches-py folder of random images (nothing is downloaded)."""
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(1, 6):
        with open(d / f"data_batch_{i}", "wb") as f:
            pickle.dump({b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                         b"labels": rng.integers(0, 10, per_batch).tolist()}, f, protocol=2)
    with open(d / "test_batch", "wb") as f:
        pickle.dump({b"data": rng.integers(0, 256, (n_test, 3072), dtype=np.uint8),
                     b"labels": rng.integers(0, 10, n_test).tolist()}, f, protocol=2)
    return root


def _project(result, epochs_total: int) -> Optional[float]:
    """Projected wall seconds of one trial of `epochs_total` epochs from its measured history."""
    hist = result.history or []
    if result.status != "ok" or len(hist) < 2:
        return None
    per_epoch = [h["seconds"] for h in hist]
    setup = max(0.0, result.seconds - sum(per_epoch))
    steady = statistics.median(per_epoch[1:-1] or per_epoch[1:])
    evaluation = max(0.0, per_epoch[-1] - steady)  # the last epoch also evaluates valid and test
    return setup + per_epoch[0] + (epochs_total - 1) * steady + evaluation


def run_trials(k: int, device: str, arch: str, data_dir: str, *, dataset: str = "cifar10-valid",
               epochs: int = 3, widths=(16, 32, 64), depths=None, compile_: bool = False, on_event=None,
               extra_options: Optional[dict] = None) -> dict:
    """K identical NB201 trials (different seeds) at once on `device` through the pool executor."""
    from nader.compiler.network import BUILDER
    from nader.runtime.executors import PoolExecutor
    from nader.runtime.jobs import Job

    options = {"epochs": epochs, "chance_epochs": None, "compile": compile_, **(extra_options or {})}
    jobs = [Job(arch=arch, dataset=dataset, preset="nb201-12", seed=seed, data_dir=data_dir, widths=list(widths),
                depths=list(depths) if depths else None, options=dict(options), name=f"trial-{seed}",
                builder=BUILDER) for seed in range(k)]
    if device.startswith("cuda"):
        ex = PoolExecutor(devices=[device], trials_per_device=k)
    else:  # the CPU path: the same machinery, K CPU workers sharing the cores
        ex = PoolExecutor(devices=["cpu"] * k)
    with ex:
        results = ex.map(jobs, on_event=on_event)
    failed = [r for r in results if r.status != "ok"]
    if failed:
        raise RuntimeError(f"{len(failed)} of {k} trials did not finish: {failed[0].error}")
    return {"k": k, "results": results}


def trials_report(device: str, arch: str, data_dir: Optional[str] = None, *, epochs: int = 3,
                  dataset: str = "cifar10-valid", synthetic_per_batch: int = 10_000, widths=(16, 32, 64),
                  depths=None, compile_: bool = False, k: Optional[int] = None, cpus: Optional[int] = None,
                  extra_options: Optional[dict] = None) -> dict:
    """K = 1, then the chosen K (or `k`): measured epoch times and the projections above."""
    import os

    from nader.runtime.gpu_slots import DeviceSlots, MemoryReport

    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="nader-trials-")
        data_dir = str(write_synthetic_cifar10(Path(tmp.name), per_batch=synthetic_per_batch,
                                               n_test=synthetic_per_batch))
    try:
        reports = []

        def keep_memory(ev):
            rep = MemoryReport.from_event(ev)
            if rep is not None:
                reports.append(rep)

        same = dict(dataset=dataset, epochs=epochs, widths=widths, depths=depths, compile_=compile_,
                    extra_options=extra_options)
        one = run_trials(1, device, arch, data_dir, on_event=keep_memory, **same)
        chosen_by = "given"
        if k is None:
            if reports:  # the pool's own rule, on the K = 1 trial's last report
                slots = DeviceSlots([device], cpus=cpus or os.cpu_count() or 1)
                k = 1 + slots.observe(device, reports[-1], running=1)
                chosen_by = "chosen from measured memory"
            else:
                k, chosen_by = 2, "no memory report (CPU): 2 for the smoke run"
        many = run_trials(k, device, arch, data_dir, **same) if k > 1 else one
    finally:
        if tmp is not None:
            tmp.cleanup()

    def figures(run, n_epochs):
        walls = [_project(r, n_epochs) for r in run["results"]]
        wall = max(w for w in walls if w is not None)  # the K trials share the device until the slowest ends
        return wall, run["k"] * 3600.0 / wall

    wall12_1, per_hour_1 = figures(one, 12)
    wall12_k, per_hour_k = figures(many, 12)
    wall200, _ = figures(one, 200)
    steady_1 = statistics.median(h["seconds"] for h in one["results"][0].history[1:])
    return {"device": device, "k": k, "k_source": chosen_by, "measured_epochs": epochs,
            "steady_epoch_s_k1": steady_1, "trial_12_s_k1": wall12_1, "trials_per_hour_k1": per_hour_1,
            "trial_12_s_k": wall12_k, "trials_per_hour_k": per_hour_k, "protocol_200_s": wall200,
            "peak_bytes": reports[-1].peak if reports else None}
