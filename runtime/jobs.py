"""Evaluation jobs and their result records, and the worker that turns one into the other.

Both are plain dataclasses that round-trip through JSON, so a job can run in this process, in
a spawned worker or on a Ray node. The worker compiles the architecture itself by calling the
job's ``builder`` ("module:function", default :data:`DEFAULT_BUILDER`), which must have the
signature of ``nader.compiler.network.build_network``::

    build_network(arch_text, skeleton="nb201", dataset="cifar10", *, widths=None, depths=None)
        -> (torch.nn.Module, {"params": int, "flops": int, "widths", "depths", "num_classes", "input_size"})

Every failure (data, build, out of memory, NaN, any exception) becomes a :class:`Result` with
``status`` "failed" or "diverged" and a readable ``error``; a failure of the machine (disk full,
I/O error, permissions; see :mod:`.faults`) becomes ``interrupted`` instead, which says nothing
about the architecture and is run again. :func:`run_job` never raises (except
KeyboardInterrupt/SystemExit, which are left to the caller).
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import random
import re
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from . import presets
from .errors import ArchitectureError, BuilderUnavailable, ConfigError, DatasetError
from .faults import E_INFRA, INTERRUPTED, infrastructure_reason
from .latency import measure_latency

DEFAULT_BUILDER = "nader.compiler.network:build_network"
STATUSES = ("ok", "diverged", "failed", "interrupted")  # interrupted: by the machine (faults.py); reruns

# error kinds of failed results
E_CONFIG, E_DATA, E_BUILDER, E_BUILD, E_OOM, E_KILLED, E_TIMEOUT, E_EXCEPTION = (
    "config", "data", "builder-unavailable", "build", "oom", "killed", "timeout", "exception")


def _canon(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class Job:
    arch: str  # the architecture text (.nad)
    skeleton: str = "nb201"
    dataset: str = "digits"
    preset: str = "quick"
    seed: int = 777
    data_dir: Optional[str] = None
    builder: str = DEFAULT_BUILDER
    widths: Optional[List[int]] = None
    depths: Optional[List[int]] = None
    options: dict = field(default_factory=dict)  # preset overrides, "device", "threads"
    name: Optional[str] = None  # display label (e.g. the .nad file name); not part of the id
    run_dir: Optional[str] = None  # where the worker checkpoints and records epochs; not part of the id

    def identity(self) -> dict:
        return {"arch": self.arch, "skeleton": self.skeleton, "dataset": self.dataset, "preset": self.preset,
                "seed": int(self.seed), "data_dir": self.data_dir, "builder": self.builder,
                "widths": self.widths, "depths": self.depths,
                "options": {k: v for k, v in sorted(self.options.items()) if k not in ("device", "threads")}}

    @property
    def job_id(self) -> str:
        """Content hash: the same architecture, settings and seed give the same id (resume key)."""
        return hashlib.sha256(_canon(self.identity()).encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Job":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, s: str) -> "Job":
        return cls.from_dict(json.loads(s))


@dataclass
class Result:
    job_id: str
    seed: int
    status: str  # ok | diverged | failed | interrupted
    error: Optional[str] = None
    error_kind: Optional[str] = None
    name: Optional[str] = None
    dataset: Optional[str] = None
    preset: Optional[str] = None
    skeleton: Optional[str] = None
    train_loss: Optional[float] = None
    train_acc: Optional[float] = None  # percent
    valid_acc: Optional[float] = None  # percent
    valid_loss: Optional[float] = None
    test_acc: Optional[float] = None  # percent
    test_loss: Optional[float] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    epochs: int = 0  # epochs run
    seconds: float = 0.0  # wall time of the job (training time accumulates across resumes)
    resumed_from: int = 0
    device: Optional[str] = None
    history: List[dict] = field(default_factory=list)  # per-epoch metrics
    info: dict = field(default_factory=dict)  # the builder's dict (widths, depths, ...)
    detail: Optional[str] = None  # traceback of unexpected exceptions, for debugging

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Result":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, s: str) -> "Result":
        return cls.from_dict(json.loads(s))

    def summary(self) -> dict:
        """The CLI's JSON record."""
        d = {"job_id": self.job_id, "name": self.name, "seed": self.seed, "status": self.status,
             "test_acc": self.test_acc, "valid_acc": self.valid_acc, "train_loss": self.train_loss,
             "train_acc": self.train_acc, "params": self.params, "flops": self.flops, "epochs": self.epochs,
             "seconds": round(self.seconds, 3)}
        if self.status != "ok":
            d["error"] = self.error
        return d


def failure(job: Job, kind: str, message: str, *, status: str = "failed", seconds: float = 0.0, **extra) -> Result:
    return Result(job_id=job.job_id, seed=job.seed, status=status, error=message, error_kind=kind, name=job.name,
                  dataset=job.dataset, preset=job.preset, skeleton=job.skeleton, seconds=seconds, **extra)


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
                from .store import RunStore

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
