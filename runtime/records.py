"""What an evaluation job is and what it gives back: plain dataclasses that round-trip through JSON.

They live apart from the worker (`jobs.py`) so that the run store, the executors and the search can
name them without importing the worker, and the worker can record into the store without a cycle.
A job names its network builder; whoever makes jobs passes it (the search and `nader-search eval`
pass the compiler's), so the runtime names no module above it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import List, Optional

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
    # "module:function" building the network (the compiler's: `nader.compiler.network.BUILDER`);
    # no default: this floor does not name the compiler. Keyword-only, so the fields keep their order.
    builder: str = field(kw_only=True)
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
