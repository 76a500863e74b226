"""Training presets.

``nb201``       NAS-Bench-201's protocol: SGD (Nesterov, momentum 0.9), lr 0.1 with cosine decay
                to 0 (per iteration), weight decay 5e-4, batch 256, 200 epochs, seeds 777/888/999.
                Crop 32 pad 4 on CIFAR, crop 16 pad 2 on ImageNet16-120 (the dataset decides).
``nb201-N``     the same with an N-epoch schedule (NB201 also reports ``nb201-12``); a search
                proxy. ``nb201-12`` and ``nb201-36`` are listed, any N works.
``quick``       the demo: 3 epochs, batch 64, lr 0.05, evaluation every epoch, training set capped
                at 4,096 images and evaluation sets at 2,048, so even CIFAR finishes quickly
                (digits: about 83% test accuracy with the NB201 ResNet, a few seconds per seed).

Every field can be overridden per job (``Job.options``) or from the CLI.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, fields
from typing import Optional, Tuple

from .errors import ConfigError


@dataclass(frozen=True)
class Preset:
    name: str
    epochs: int = 200
    batch_size: int = 256
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 5e-4
    lr_min: float = 0.0
    warmup_epochs: int = 0
    label_smoothing: float = 0.0
    eval_batch_size: int = 1024
    eval_every: int = 0  # evaluate valid/test every k epochs (0 = only after the last epoch)
    seeds: Tuple[int, ...] = (777, 888, 999)
    train_limit: Optional[int] = None  # cap on training images (fixed random subset)
    eval_limit: Optional[int] = None  # cap on valid/test images
    chance_epochs: Optional[int] = None  # stop as diverged if still at chance after this many epochs
    chance_margin: float = 1.5  # "at chance": train accuracy <= margin / num_classes
    amp: str = "auto"  # auto (bf16 if supported else fp16, CUDA only) | bf16 | fp16 | off
    channels_last: str = "auto"  # auto (on for CPU and CUDA: faster convolutions) | on | off
    compile: bool = False  # torch.compile the model
    deterministic: str = "auto"  # auto (on for CPU) | on | off
    checkpoint_every: int = 1  # epochs between checkpoints (when the job has a run directory)

    def replace(self, **changes) -> "Preset":
        return dataclasses.replace(self, **changes)


_NB201 = Preset(name="nb201", chance_epochs=10)

PRESETS = {
    "nb201": _NB201,
    "nb201-12": _NB201.replace(name="nb201-12", epochs=12, chance_epochs=3),
    "nb201-36": _NB201.replace(name="nb201-36", epochs=36, chance_epochs=5),
    "quick": Preset(name="quick", epochs=3, batch_size=64, lr=0.05, eval_every=1, seeds=(777,),
                    train_limit=4096, eval_limit=2048, eval_batch_size=512),
}

_OPTION_FIELDS = {f.name: f for f in fields(Preset) if f.name != "name"}


def get_preset(name: str) -> Preset:
    key = name.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    m = re.fullmatch(r"nb201-(\d{1,4})", key)
    if m and int(m.group(1)) > 0:
        n = int(m.group(1))
        return _NB201.replace(name=key, epochs=n, chance_epochs=max(2, min(10, n // 4)))
    raise ConfigError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)} (or nb201-N for N epochs)")


def _coerce(name: str, value):
    f = _OPTION_FIELDS[name]
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    try:
        if value is None:
            if "Optional" in t:
                return None
            raise ValueError("may not be empty")
        if t == "bool":
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(f"not a boolean: {value!r}")
            return bool(value)
        if t in ("int", "Optional[int]"):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(f"not an integer: {value!r}")
            return int(value)
        if t == "float":
            return float(value)
        if t == "str":
            return str(value)
        if t.startswith("Tuple"):
            return tuple(int(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"option {name}: {exc}") from None
    return value


def resolve(preset: str, options: Optional[dict] = None) -> Preset:
    """A preset with per-job overrides applied and checked."""
    p = get_preset(preset)
    changes = {}
    for k, v in (options or {}).items():
        if k in _OPTION_FIELDS:
            changes[k] = _coerce(k, v)
    p = p.replace(**changes) if changes else p
    if p.epochs < 1 or p.batch_size < 1 or p.eval_batch_size < 1:
        raise ConfigError("epochs and batch sizes must be positive")
    if p.amp not in ("auto", "bf16", "fp16", "off"):
        raise ConfigError(f"amp must be auto, bf16, fp16 or off, not {p.amp!r}")
    for k in ("channels_last", "deterministic"):
        if getattr(p, k) not in ("auto", "on", "off"):
            raise ConfigError(f"{k} must be auto, on or off, not {getattr(p, k)!r}")
    return p


# options a job may carry that are not preset fields
RUN_OPTIONS = ("device", "threads", "latency")  # latency: measure it after training (runtime/latency.py)


def check_options(options: Optional[dict]) -> None:
    unknown = sorted(set(options or {}) - set(_OPTION_FIELDS) - set(RUN_OPTIONS))
    if unknown:
        raise ConfigError(f"unknown option(s): {', '.join(unknown)}; known: "
                          f"{', '.join(sorted(set(_OPTION_FIELDS) | set(RUN_OPTIONS)))}")
