"""The training loop: NAS-Bench-201 protocol, device-side data, checkpoint/resume, early stop.

Accuracies are percentages (0..100) as NAS-Bench-201 reports them; losses are mean
cross-entropy per image.
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .data import DatasetBundle
from .pipeline import DeviceLoader, place_split
from .presets import Preset

CHECKPOINT_FORMAT = 1


def resolve_device(spec: Optional[str] = None) -> torch.device:
    """``auto`` (or None) picks CUDA when present, else the CPU."""
    if spec in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(spec)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {spec!r} requested but CUDA is not available")
    return dev


@dataclass
class EpochMetrics:
    epoch: int  # 1-based
    train_loss: float
    train_acc: float
    lr: float
    seconds: float  # wall time of this epoch (training + any evaluation)
    valid_acc: Optional[float] = None
    valid_loss: Optional[float] = None
    test_acc: Optional[float] = None
    test_loss: Optional[float] = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainOutcome:
    status: str  # "ok" | "diverged"
    reason: Optional[str]
    history: List[dict]
    epochs_run: int  # epochs completed in total (including those before a resume)
    resumed_from: int  # epochs restored from a checkpoint (0 = fresh start)
    seconds: float  # training wall time, accumulated across resumes
    train_loss: Optional[float] = None
    train_acc: Optional[float] = None
    valid_acc: Optional[float] = None
    valid_loss: Optional[float] = None
    test_acc: Optional[float] = None
    test_loss: Optional[float] = None
    device: str = "cpu"
    amp: Optional[str] = None
    previous_seconds: float = 0.0  # training time of earlier sessions (restored from the checkpoint)
    notes: List[str] = field(default_factory=list)  # e.g. "torch.compile failed ...; trained eagerly"


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc).lower()


def atomic_save(obj, path: Path) -> None:
    """torch.save to a temporary file in the same folder, fsync, then rename over `path`.

    The bytes are made in memory first, so a failing disk raises a plain OSError naming `path`
    (torch's own writer turns ENOSPC into an assertion about zip offsets); the caller tells a
    machine problem from the architecture's by that."""
    path = Path(path)
    buf = io.BytesIO()
    torch.save(obj, buf)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=str(path.parent))
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp) -> None:
    if tmp is not None:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def load_checkpoint(path: Path) -> Optional[dict]:
    """The checkpoint at `path`, or None when absent or unreadable (training then starts afresh)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return None
    if not isinstance(ck, dict) or ck.get("format") != CHECKPOINT_FORMAT:
        return None
    return ck


@contextlib.contextmanager
def _determinism(device: torch.device, mode: str):
    on = mode == "on" or (mode == "auto" and device.type == "cpu")
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_bench = torch.backends.cudnn.benchmark
    prev_cudnn_det = torch.backends.cudnn.deterministic
    try:
        if on:
            if device.type == "cuda":
                os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True, warn_only=True)
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
        elif device.type == "cuda":
            torch.backends.cudnn.benchmark = True
        yield on
    finally:
        torch.use_deterministic_algorithms(prev_det, warn_only=prev_warn)
        torch.backends.cudnn.benchmark = prev_bench
        torch.backends.cudnn.deterministic = prev_cudnn_det


def _amp_dtype(device: torch.device, mode: str) -> Optional[torch.dtype]:
    if device.type != "cuda" or mode == "off":
        return None
    if mode == "fp16":
        return torch.float16
    if mode == "bf16" or torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float16


def _cuda_memory(device: torch.device) -> dict:
    """This process's allocator peak and the device's free memory, for the pool's choice of
    trials per GPU (runtime/gpu_slots.py); nothing on the CPU."""
    if device.type != "cuda":
        return {}
    free, total = torch.cuda.mem_get_info(device)
    return {"cuda_peak_bytes": int(torch.cuda.max_memory_reserved(device)), "cuda_free_bytes": int(free),
            "cuda_total_bytes": int(total)}


def lr_at(step: int, total: int, preset: Preset, steps_per_epoch: int) -> float:
    """Linear warm-up (optional) then cosine decay from `lr` to `lr_min`, per iteration."""
    warm = preset.warmup_epochs * steps_per_epoch
    if step < warm:
        return preset.lr * (step + 1) / warm
    t = (step - warm) / max(1, total - warm)
    return preset.lr_min + 0.5 * (preset.lr - preset.lr_min) * (1.0 + math.cos(math.pi * t))


@torch.inference_mode()
def accuracy_and_loss(model: nn.Module, loader: DeviceLoader, amp_dtype=None) -> tuple:
    """(accuracy %, mean loss) of `model` over the loader's split."""
    model.eval()
    dev = loader.device
    loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
    correct = torch.zeros((), dtype=torch.int64, device=dev)
    n = 0
    for x, y in loader.epoch(0):
        with torch.autocast(dev.type, dtype=amp_dtype) if amp_dtype else contextlib.nullcontext():
            out = model(x)
        out = out.float()
        loss_sum += F.cross_entropy(out, y, reduction="sum").double()
        correct += (out.argmax(1) == y).sum()
        n += y.shape[0]
    if n == 0:
        return None, None
    return 100.0 * correct.item() / n, loss_sum.item() / n


class Trainer:
    """Trains one model on one dataset bundle under one preset.

    ``callbacks`` are called with an event dict after each epoch (after its checkpoint is on
    disk), ``{"type": "epoch", "epoch": k, "epochs": N, **metrics}``, and once at the start with
    ``{"type": "start", "epochs": N, "resumed_from": k}``. An exception raised by a callback
    stops training; the checkpoint of the finished epoch stays and a rerun resumes after it.
    """

    NAN_CHECK_EVERY = 20  # steps between non-finite-loss checks (a host sync on CUDA)

    def __init__(self, model: nn.Module, data: DatasetBundle, preset: Preset, *, seed: int,
                 device: Optional[torch.device] = None, checkpoint_path: Optional[Path] = None,
                 callbacks: Sequence[Callable[[dict], None]] = (),
                 step_hook: Optional[Callable[[int, int, int], None]] = None):
        self.model = model
        self.data = data
        self.preset = preset
        self.seed = int(seed)
        self.device = device or resolve_device()
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path else None
        self.callbacks = list(callbacks)
        self.step_hook = step_hook  # called as step_hook(epoch, step, batch_size) after each step

    # ------------------------------------------------------------------ helpers
    def _emit(self, event: dict) -> None:
        for cb in self.callbacks:
            cb(event)

    def _save(self, epoch: int, opt, scaler, history, elapsed) -> None:
        if self.checkpoint_path is None:
            return
        ck = {
            "format": CHECKPOINT_FORMAT,
            "epoch": epoch,
            "epochs": self.preset.epochs,
            "seed": self.seed,
            "model": self.model.state_dict(),
            "optimizer": opt.state_dict(),
            "scaler": scaler.state_dict() if scaler is not None else None,
            "rng_cpu": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else None,
            "history": history,
            "elapsed": elapsed,
        }
        atomic_save(ck, self.checkpoint_path)

    def _restore(self, opt, scaler) -> tuple:
        """(epochs done, history, elapsed) from the checkpoint, or (0, [], 0.0)."""
        if self.checkpoint_path is None:
            return 0, [], 0.0
        ck = load_checkpoint(self.checkpoint_path)
        if ck is None or ck.get("epochs") != self.preset.epochs or ck.get("seed") != self.seed:
            return 0, [], 0.0
        try:
            self.model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            if scaler is not None and ck.get("scaler"):
                scaler.load_state_dict(ck["scaler"])
            torch.set_rng_state(ck["rng_cpu"])
            if self.device.type == "cuda" and ck.get("rng_cuda"):
                torch.cuda.set_rng_state_all(ck["rng_cuda"])
        except Exception:
            return 0, [], 0.0  # a checkpoint of a different network: start afresh
        return int(ck["epoch"]), list(ck.get("history") or []), float(ck.get("elapsed") or 0.0)

    # ------------------------------------------------------------------ main loop
    def fit(self) -> TrainOutcome:
        p, dev = self.preset, self.device
        with _determinism(dev, p.deterministic):
            return self._fit(p, dev)

    def _fit(self, p: Preset, dev: torch.device) -> TrainOutcome:
        data = self.data
        cl = p.channels_last == "on" or (p.channels_last == "auto" and dev.type in ("cuda", "cpu"))
        amp_dtype = _amp_dtype(dev, p.amp)
        model = self.model.to(dev)
        if cl:
            model = model.to(memory_format=torch.channels_last)
        train = DeviceLoader(place_split(data.train, dev, p.train_limit), p.batch_size, data.mean, data.std,
                             train=True, pad=data.pad, flip=data.flip, channels_last=cl, seed=self.seed)
        valid = DeviceLoader(place_split(data.valid, dev, p.eval_limit), p.eval_batch_size, data.mean, data.std,
                             train=False, channels_last=cl)
        test = DeviceLoader(place_split(data.test, dev, p.eval_limit), p.eval_batch_size, data.mean, data.std,
                            train=False, channels_last=cl)
        steps = len(train)
        if steps == 0:
            raise RuntimeError("the training split is empty")
        total = steps * p.epochs
        opt = torch.optim.SGD(model.parameters(), lr=p.lr, momentum=p.momentum, nesterov=p.nesterov and p.momentum > 0,
                              weight_decay=p.weight_decay)
        scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None
        start, history, elapsed = self._restore(opt, scaler)
        notes: List[str] = []
        compiled = None
        if p.compile:
            try:
                # static shapes: an epoch's smaller last batch gets its own graph instead of turning
                # every kernel dynamic
                compiled = torch.compile(model, dynamic=False)
            except Exception as exc:  # no working backend here: train eagerly
                notes.append(f"torch.compile unavailable ({type(exc).__name__}: {str(exc)[:200]}); trained eagerly")
        self._emit({"type": "start", "epochs": p.epochs, "resumed_from": start})
        t_begin = time.perf_counter()
        chance = 100.0 * p.chance_margin / data.num_classes
        status, reason = "ok", None
        last = history[-1] if history else None

        for epoch in range(start + 1, p.epochs + 1):
            t0 = time.perf_counter()
            model.train()
            loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
            correct = torch.zeros((), dtype=torch.int64, device=dev)
            seen = 0
            lr = p.lr
            for i, (x, y) in enumerate(train.epoch(epoch)):
                lr = lr_at((epoch - 1) * steps + i, total, p, steps)
                for g in opt.param_groups:
                    g["lr"] = lr
                with torch.autocast(dev.type, dtype=amp_dtype) if amp_dtype else contextlib.nullcontext():
                    if compiled is not None:
                        try:
                            out = compiled(x)
                        except Exception as exc:
                            if _is_oom(exc):
                                raise
                            # compilation failed (no C++ compiler, an unsupported op, ...): eager from here on
                            notes.append(f"torch.compile failed ({type(exc).__name__}: {str(exc)[:200]}); "
                                         f"trained eagerly")
                            compiled = None
                            out = model(x)
                    else:
                        out = model(x)
                    loss = F.cross_entropy(out, y, label_smoothing=p.label_smoothing)
                opt.zero_grad(set_to_none=True)
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                else:
                    loss.backward()
                    opt.step()
                bs = y.shape[0]
                if self.step_hook is not None:
                    self.step_hook(epoch, i, bs)
                loss_sum += loss.detach().double() * bs
                correct += (out.detach().argmax(1) == y).sum()
                seen += bs
                if (i + 1) % self.NAN_CHECK_EVERY == 0 and not math.isfinite(loss_sum.item()):
                    status, reason = "diverged", f"loss became {loss_sum.item()} in epoch {epoch} (step {i + 1})"
                    break
            train_loss = loss_sum.item() / max(1, seen)
            train_acc = 100.0 * correct.item() / max(1, seen)
            if status == "ok" and not math.isfinite(train_loss):
                status, reason = "diverged", f"loss became {train_loss} in epoch {epoch}"
            m = EpochMetrics(epoch=epoch, train_loss=train_loss, train_acc=train_acc, lr=lr, seconds=0.0)
            if status == "ok" and (epoch == p.epochs or (p.eval_every and epoch % p.eval_every == 0)):
                m.valid_acc, m.valid_loss = accuracy_and_loss(model, valid, amp_dtype)
                m.test_acc, m.test_loss = accuracy_and_loss(model, test, amp_dtype)
            m.seconds = time.perf_counter() - t0
            if (status == "ok" and p.chance_epochs is not None and epoch >= p.chance_epochs
                    and epoch < p.epochs and train_acc <= chance):
                status = "diverged"
                reason = (f"training accuracy stayed at chance level ({train_acc:.2f}% <= {chance:.2f}%) "
                          f"after {epoch} epochs")
            history.append(m.to_dict())
            last = history[-1]
            now = elapsed + (time.perf_counter() - t_begin)
            if status == "ok" and (epoch % max(1, p.checkpoint_every) == 0 or epoch == p.epochs):
                self._save(epoch, opt, scaler, history, now)
            self._emit({"type": "epoch", "epochs": p.epochs, **m.to_dict(), **_cuda_memory(dev)})
            if status != "ok":
                break

        seconds = elapsed + (time.perf_counter() - t_begin)
        outcome = TrainOutcome(status=status, reason=reason, history=history, epochs_run=len(history),
                               resumed_from=start, seconds=seconds, device=str(dev),
                               amp=str(amp_dtype).replace("torch.", "") if amp_dtype else None,
                               previous_seconds=elapsed, notes=notes)
        if last is not None:
            outcome.train_loss, outcome.train_acc = last["train_loss"], last["train_acc"]
        if status == "ok":
            # test_acc, not valid_acc: NB201's `cifar10` setting has no validation split
            if last is not None and last.get("test_acc") is not None and last["epoch"] == p.epochs:
                outcome.valid_acc, outcome.valid_loss = last["valid_acc"], last["valid_loss"]
                outcome.test_acc, outcome.test_loss = last["test_acc"], last["test_loss"]
            else:  # finished before (resumed from the last checkpoint): evaluate the restored model
                outcome.valid_acc, outcome.valid_loss = accuracy_and_loss(model, valid, amp_dtype)
                outcome.test_acc, outcome.test_loss = accuracy_and_loss(model, test, amp_dtype)
        return outcome
