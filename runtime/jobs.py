"""The worker that turns an evaluation job into its result record (both in :mod:`.records`).

Both are plain dataclasses that round-trip through JSON, so a job can run in this process, in
a spawned worker or on a Ray node. The worker compiles the architecture itself by calling the
job's ``builder`` ("module:function"; the compiler's is ``nader.compiler.network.BUILDER``), which
must have the signature of the compiler's ``build_network``::

    build_network(arch_text, skeleton="nb201", dataset="cifar10", *, widths=None, depths=None)
        -> (torch.nn.Module, {"params": int, "flops": int, "widths", "depths", "num_classes", "input_size"})

Every failure (data, build, out of memory, NaN, any exception) becomes a :class:`Result` with
``status`` "failed" or "diverged" and a readable ``error``; a failure of the machine (disk full,
I/O error, permissions; see :mod:`.faults`) becomes ``interrupted`` instead, which says nothing
about the architecture and is run again. :func:`run_job` never raises (except
KeyboardInterrupt/SystemExit, which are left to the caller).
"""
from __future__ import annotations

import importlib
import json
import random
import re
import time
import traceback
from pathlib import Path
from typing import Callable, Optional, Sequence

from . import presets
from .errors import ArchitectureError, BuilderUnavailable, ConfigError, DatasetError
from .faults import E_INFRA, INTERRUPTED, infrastructure_reason
from .latency import measure_latency
from .records import (  # noqa: F401 (re-exported: the worker's callers name them here)
    E_BUILD, E_BUILDER, E_CONFIG, E_DATA, E_EXCEPTION, E_KILLED, E_OOM, E_TIMEOUT, STATUSES, Job,
    Result, _canon, failure)
from .store import RunStore


# --------------------------------------------------------------------------- builder


_BUILDER_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def resolve_builder(spec: str) -> Callable:
    """Import "module:function" (no evaluation of arbitrary text: a dotted name and an attribute)."""
    if not isinstance(spec, str) or not _BUILDER_RE.match(spec):
        raise BuilderUnavailable(f"builder must be 'module:function', got {spec!r}")
    mod_name, fn_name = spec.split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise BuilderUnavailable(f"the network builder {spec} is not available ({exc})") from None
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise BuilderUnavailable(f"the network builder {spec} is not available ({mod_name} has no {fn_name})")
    return fn


def _is_build_error(exc: BaseException) -> bool:
    return isinstance(exc, ArchitectureError)


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    oom = getattr(getattr(__import__("torch"), "cuda", None), "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def _short(exc: BaseException) -> str:
    msg = str(exc).strip() or type(exc).__name__
    return msg if len(msg) < 2000 else msg[:2000] + " ..."


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def checkpoint_path(run_dir, job_id: str) -> Path:
    return Path(run_dir) / "checkpoints" / f"{job_id}.pt"


# --------------------------------------------------------------------------- worker


def run_job(job: Job, *, device: Optional[str] = None, callbacks: Sequence[Callable[[dict], None]] = (),
            record_epochs: bool = True) -> Result:
    """Run one job here and return its result record; never raises for job failures.

    With ``job.run_dir`` set, checkpoints go to ``RUN/checkpoints/<job_id>.pt`` every epoch
    (training resumes from there) and, when ``record_epochs``, each epoch is committed to the
    run's SQLite store. ``callbacks`` receive the trainer's events (see :class:`Trainer`), each
    tagged with ``job_id``.
    """
    import torch

    t0 = time.perf_counter()
    prev_threads = torch.get_num_threads()
    try:
        threads = job.options.get("threads") if isinstance(job.options, dict) else None
        if threads:
            try:
                n = int(threads)
                if n < 1:
                    raise ValueError
            except (TypeError, ValueError):
                return failure(job, E_CONFIG, f"option threads: not a positive integer: {threads!r}")
            torch.set_num_threads(n)
        return _run_job(job, device, callbacks, record_epochs, t0)
    finally:
        if torch.get_num_threads() != prev_threads:
            torch.set_num_threads(prev_threads)


def _run_job(job: Job, device, callbacks, record_epochs: bool, t0: float) -> Result:
    try:
        import torch

        from .data import canonical_name, dataset_spec, load_dataset
        from .trainer import Trainer, resolve_device

        presets.check_options(job.options)
        preset = presets.resolve(job.preset, job.options)
        dataset = canonical_name(job.dataset)
        dev = resolve_device(device or job.options.get("device"))
    except (ConfigError, DatasetError, RuntimeError, ValueError) as exc:
        return failure(job, E_CONFIG, _short(exc), seconds=time.perf_counter() - t0)

    try:
        data = load_dataset(dataset, job.data_dir)
    except DatasetError as exc:
        return failure(job, E_DATA, str(exc), seconds=time.perf_counter() - t0)
    except Exception as exc:
        reason = infrastructure_reason(exc)
        if reason is not None:
            return failure(job, E_INFRA, reason, status=INTERRUPTED, seconds=time.perf_counter() - t0)
        return failure(job, E_DATA, f"{dataset}: cannot load: {_short(exc)}", seconds=time.perf_counter() - t0)

    try:
        build = resolve_builder(job.builder)
    except BuilderUnavailable as exc:
        return failure(job, E_BUILDER, str(exc), seconds=time.perf_counter() - t0)

    seed_everything(job.seed)
    try:
        kwargs = {}
        if job.widths is not None:
            kwargs["widths"] = list(job.widths)
        if job.depths is not None:
            kwargs["depths"] = list(job.depths)
        # both CIFAR-10 settings build the same network: the builder gets "cifar10"
        built = build(job.arch, job.skeleton, dataset_spec(dataset).network_dataset, **kwargs)
        model, info = built if isinstance(built, tuple) else (built, {})
        info = dict(info or {})
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"builder returned {type(model).__name__}, not a torch.nn.Module")
    except Exception as exc:
        kind = E_OOM if _is_oom(exc) else E_BUILD
        msg = _short(exc)
        if not _is_build_error(exc) and kind == E_BUILD:
            msg = f"{type(exc).__name__}: {msg}"
        return failure(job, kind, f"cannot build the network: {msg}", seconds=time.perf_counter() - t0)

    params = info.get("params")
    if params is None:
        params = sum(p.numel() for p in model.parameters())
    info_clean = json.loads(json.dumps(info, default=str))

    cbs = [lambda ev, _id=job.job_id: ev.setdefault("job_id", _id)]
    store = None
    ck_path = None
    if job.run_dir:
        ck_path = checkpoint_path(job.run_dir, job.job_id)
        if record_epochs:
            try:
                store = RunStore(job.run_dir, check=False)
                cbs.append(lambda ev: ev["type"] == "epoch" and store.record_epoch(job.job_id, ev))
            except Exception:
                store = None  # the run directory is not reachable from here: checkpoints only
    cbs.extend(callbacks)

    extra = dict(params=int(params), flops=info.get("flops"), info=info_clean, device=str(dev))
    trainer = Trainer(model, data, preset, seed=job.seed, device=dev, checkpoint_path=ck_path, callbacks=cbs)
    try:
        out = trainer.fit()
    except Exception as exc:
        history = []
        reason = None if _is_oom(exc) else infrastructure_reason(exc, job.run_dir and Path(job.run_dir) / "runs.sqlite")
        if reason is not None:  # the disk, not the architecture: rerun on resume
            return failure(job, E_INFRA, reason, status=INTERRUPTED, seconds=time.perf_counter() - t0, **extra)
        if _is_oom(exc):
            kind, msg = E_OOM, f"out of memory: {_short(exc)}"
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        else:
            kind, msg = E_EXCEPTION, f"{type(exc).__name__}: {_short(exc)}"
        return failure(job, kind, msg, seconds=time.perf_counter() - t0, detail=traceback.format_exc(limit=20),
                       history=history, **extra)
    finally:
        if store is not None:
            store.close()

    if out.notes:
        extra["info"] = {**extra["info"], "runtime_notes": list(out.notes)}
    if out.status == "ok" and isinstance(job.options, dict) and job.options.get("latency"):
        size = info.get("input_size") or dataset_spec(dataset).input_size
        extra["info"] = {**extra["info"], "latency_ms": measure_latency(model, int(size), dev)}
    return Result(job_id=job.job_id, seed=job.seed, status=out.status, error=out.reason,
                  error_kind="diverged" if out.status == "diverged" else None, name=job.name,
                  dataset=dataset, preset=preset.name, skeleton=job.skeleton,
                  train_loss=out.train_loss, train_acc=out.train_acc, valid_acc=out.valid_acc,
                  valid_loss=out.valid_loss, test_acc=out.test_acc, test_loss=out.test_loss,
                  epochs=out.epochs_run, seconds=time.perf_counter() - t0 + out.previous_seconds,
                  resumed_from=out.resumed_from, history=out.history, **extra)


def result_metrics(r: Result) -> dict:
    """The fields that must agree between executors for the same job (no timings, no device)."""
    keep = ("job_id", "seed", "status", "error_kind", "train_loss", "train_acc", "valid_acc", "valid_loss",
            "test_acc", "test_loss", "params", "flops", "epochs")
    d = {k: getattr(r, k) for k in keep}
    d["history"] = [{k: v for k, v in h.items() if k != "seconds"} for h in r.history]
    return d
