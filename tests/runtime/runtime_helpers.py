"""A tiny real network factory with build_network's signature, for the runtime's tests.

The "architecture text" given to :func:`tiny_builder` is a small JSON object (parsed with
json, never evaluated) that picks the model and the faults to inject:

    {"width": 8}                      a conv-BN-ReLU ×2 network with a linear classifier
    {"build_error": "msg"}            raises BuildError (as nader.compiler.network does)
    {"nan_after": 3}                  the loss turns NaN after 3 training steps
    {"dead": true}                    features are zeroed: the network can only learn class priors
    {"die_after": 5, "marker": PATH}  the process kills itself (SIGKILL) at training step 5 unless
                                      PATH exists; PATH is created first, so a rerun survives
    {"exit_after": 5}                 os._exit(3) at training step 5 (every time)
"""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import torch
import torch.nn as nn

from nader.runtime.errors import ArchitectureError

NUM_CLASSES = {"digits": 10, "cifar10": 10, "cifar100": 100, "imagenet16-120": 120}
INPUT_SIZE = {"digits": 16, "cifar10": 32, "cifar100": 32, "imagenet16-120": 16}


class BuildError(ArchitectureError):
    """A builder's own build error: the runtime recognises it by its base class."""


class TinyNet(nn.Module):
    def __init__(self, width: int, num_classes: int, cfg: dict):
        super().__init__()
        w = width
        self.features = nn.Sequential(
            nn.Conv2d(3, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
            nn.Conv2d(w, 2 * w, 3, stride=2, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(),
        )
        self.fc = nn.Linear(2 * w, num_classes)
        self.cfg = cfg
        self.steps = 0

    def forward(self, x):
        if self.training:
            self.steps += 1
            self._faults()
        h = self.features(x).mean((2, 3))
        if self.cfg.get("dead"):
            h = h * 0.0
        out = self.fc(h)
        if self.cfg.get("nan_after") is not None and self.training and self.steps > self.cfg["nan_after"]:
            out = out * float("nan")
        return out

    def _faults(self):
        cfg = self.cfg
        if cfg.get("exit_after") is not None and self.steps >= cfg["exit_after"]:
            os._exit(3)
        if cfg.get("die_after") is not None and self.steps >= cfg["die_after"]:
            marker = Path(cfg["marker"])
            if not marker.exists():
                marker.write_text("killed once\n")
                os.kill(os.getpid(), signal.SIGKILL)


def tiny_builder(arch_text: str, skeleton: str = "nb201", dataset: str = "cifar10", *, widths=None, depths=None):
    cfg = json.loads(arch_text) if arch_text.strip() else {}
    if not isinstance(cfg, dict):
        raise BuildError("the tiny test builder expects a JSON object")
    if "build_error" in cfg:
        raise BuildError(cfg["build_error"])
    width = int((widths or [cfg.get("width", 8)])[0])
    nc, size = NUM_CLASSES[dataset], INPUT_SIZE[dataset]
    model = TinyNet(width, nc, cfg)
    params = sum(p.numel() for p in model.parameters())
    flops = 9 * 3 * width * size * size + 9 * width * 2 * width * (size // 2) ** 2 + 2 * width * nc
    return model, {"params": params, "flops": flops, "widths": [width, 2 * width], "depths": [1, 1],
                   "num_classes": nc, "input_size": size}


# --------------------------------------------------------------------------- tiny datasets in the real formats
import pickle  # noqa: E402

import numpy as np  # noqa: E402


def _images(rng, n, side):
    return rng.integers(0, 256, size=(n, 3 * side * side), dtype=np.uint8)


def write_split(path: Path, parts: dict) -> Path:
    """A NAS-Bench-201 split file: {"name": ["int", ["0", "5", ...]], ...}."""
    body = ",\n".join(f'  "{k}"{" " * 10}: ["int"   , [{", ".join(chr(34) + str(i) + chr(34) for i in v)}]]'
                      for k, v in parts.items())
    path.write_text("{\n" + body + "\n}\n")
    return path


def write_cifar10(root: Path, per_batch: int = 20, n_test: int = 30, seed: int = 0, split: bool = True) -> dict:
    """cifar-10-batches-py/ with 5 train batches + test batch (py2-style bytes keys) and, with `split`,
    a cifar-split.txt of its own (the bundled one indexes the real 50,000 images)."""
    rng = np.random.default_rng(seed)
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True, exist_ok=True)
    train_x, train_y = [], []
    for i in range(1, 6):
        x = _images(rng, per_batch, 32)
        y = [int(v) for v in rng.integers(0, 10, per_batch)]
        with open(d / f"data_batch_{i}", "wb") as f:
            pickle.dump({b"batch_label": b"training batch", b"data": x, b"labels": y, b"filenames": []}, f, protocol=2)
        train_x.append(x)
        train_y += y
    tx = _images(rng, n_test, 32)
    ty = [int(v) for v in rng.integers(0, 10, n_test)]
    with open(d / "test_batch", "wb") as f:
        pickle.dump({b"data": tx, b"labels": ty}, f, protocol=2)
    with open(d / "batches.meta", "wb") as f:
        pickle.dump({b"label_names": [b"c%d" % i for i in range(10)]}, f, protocol=2)
    n = 5 * per_batch
    perm = rng.permutation(n)
    train_idx, valid_idx = sorted(perm[: n // 2].tolist()), sorted(perm[n // 2:].tolist())
    if split:
        write_split(root / "cifar-split.txt", {"train": train_idx, "valid": valid_idx})
    return {"train_x": np.concatenate(train_x), "train_y": np.array(train_y), "test_x": tx, "test_y": np.array(ty),
            "train_idx": train_idx, "valid_idx": valid_idx}


def write_cifar100(root: Path, n_train: int = 60, n_test: int = 40, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    d = root / "cifar-100-python"
    d.mkdir(parents=True, exist_ok=True)
    x, y = _images(rng, n_train, 32), [int(v) for v in rng.integers(0, 100, n_train)]
    with open(d / "train", "wb") as f:
        pickle.dump({b"data": x, b"fine_labels": y, b"coarse_labels": [0] * n_train}, f, protocol=2)
    tx, ty = _images(rng, n_test, 32), [int(v) for v in rng.integers(0, 100, n_test)]
    with open(d / "test", "wb") as f:
        pickle.dump({b"data": tx, b"fine_labels": ty, b"coarse_labels": [0] * n_test}, f, protocol=2)
    with open(d / "meta", "wb") as f:
        pickle.dump({b"fine_label_names": [b"f%d" % i for i in range(100)]}, f, protocol=2)
    perm = rng.permutation(n_test)
    xv, xt = sorted(perm[: n_test // 2].tolist()), sorted(perm[n_test // 2:].tolist())
    write_split(root / "cifar100-test-split.txt", {"xvalid": xv, "xtest": xt})
    return {"train_x": x, "train_y": np.array(y), "test_x": tx, "test_y": np.array(ty), "xvalid": xv, "xtest": xt}


def write_imagenet16(root: Path, per_batch: int = 12, n_val: int = 40, seed: int = 2) -> dict:
    """ImageNet16/ with train_data_batch_1..10 and val_data (str keys, labels 1..1000)."""
    rng = np.random.default_rng(seed)
    d = root / "ImageNet16"
    d.mkdir(parents=True, exist_ok=True)
    xs, ys = [], []
    for i in range(1, 11):
        x = _images(rng, per_batch, 16)
        y = [int(v) for v in rng.choice([1, 2, 60, 120, 121, 500, 1000], per_batch)]
        with open(d / f"train_data_batch_{i}", "wb") as f:
            pickle.dump({"data": x, "labels": y, "mean": np.zeros(768)}, f)
        xs.append(x)
        ys += y
    vx = _images(rng, n_val, 16)
    vy = [int(v) for v in rng.choice([1, 7, 120, 121, 999], n_val)]
    with open(d / "val_data", "wb") as f:
        pickle.dump({"data": vx, "labels": vy}, f)
    keep = np.array(vy) <= 120
    n_keep = int(keep.sum())
    perm = rng.permutation(n_keep)
    xv, xt = sorted(perm[: n_keep // 2].tolist()), sorted(perm[n_keep // 2:].tolist())
    write_split(root / "imagenet-16-120-test-split.txt", {"xvalid": xv, "xtest": xt})
    return {"train_x": np.concatenate(xs), "train_y": np.array(ys), "val_x": vx, "val_y": np.array(vy),
            "xvalid": xv, "xtest": xt}


def write_full_size_cifar10(root: Path, n_test: int = 20) -> Path:
    """cifar-10-batches-py/ with the real 50,000 training images' count (10,000 per batch, the
    standard format) and no split file. Image i is zero except for its first two bytes, which hold
    i (little-endian), and its label is i % 10, so a test can tell which images a split picked."""
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True, exist_ok=True)
    for b in range(5):
        idx = np.arange(b * 10_000, (b + 1) * 10_000)
        x = np.zeros((10_000, 3072), np.uint8)
        x[:, 0], x[:, 1] = idx & 0xFF, idx >> 8
        with open(d / f"data_batch_{b + 1}", "wb") as f:
            pickle.dump({b"data": x, b"labels": (idx % 10).tolist()}, f, protocol=2)
    with open(d / "test_batch", "wb") as f:
        pickle.dump({b"data": np.full((n_test, 3072), 7, np.uint8), b"labels": [i % 10 for i in range(n_test)]},
                    f, protocol=2)
    return d


def image_ids(images) -> list:
    """The indices written by write_full_size_cifar10 back from uint8 N×3×32×32 images."""
    first = images[:, 0, 0, :2].to(dtype=torch.int64)  # bytes 0 and 1 of the CHW image
    return (first[:, 0] + 256 * first[:, 1]).tolist()
