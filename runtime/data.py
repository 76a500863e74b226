"""Datasets from local files, never downloaded, held in memory as uint8 tensors.

Every dataset becomes a :class:`DatasetBundle`: three splits (train / valid / test), each one
``uint8`` tensor of shape ``N×3×H×W`` plus ``int64`` labels, and the facts the input pipeline
needs (mean/std in 0..255 units, crop padding, whether horizontal flips are allowed).

Splits follow NAS-Bench-201, whose dataset names they keep:

* ``cifar10-valid``: train = the ``train`` half of the CIFAR-10 train set (``cifar-split.txt``),
  valid = its ``valid`` half, test = the CIFAR-10 test set.
* ``cifar10``: train = the whole CIFAR-10 train set (50,000), valid = none (empty; NB201 has no
  validation split in this setting), test = the CIFAR-10 test set.
* ``cifar100``: train = the CIFAR-100 train set; valid / test = the ``xvalid`` / ``xtest`` halves
  of the test set (``cifar100-test-split.txt``).
* ``imagenet16-120``: train = ImageNet16 training images of classes 1..120 (labels mapped to
  0..119); valid / test = ``xvalid`` / ``xtest`` of the validation images of those classes
  (``imagenet-16-120-test-split.txt``).
* ``digits``: scikit-learn's bundled 8×8 handwritten digits (1,797 images, no file needed),
  grey replicated to 3 channels and upsampled to 16×16 with ``torch.nn.functional.interpolate``
  (bilinear, ``align_corners=False``, computed in float64 and rounded; deterministic), split
  60/20/20 by a fixed NumPy ``PCG64(0)`` permutation.

The split files ship with the package (:mod:`.splits`); a file of the same name in the data
directory (or DATA/splits/, or the dataset folder) overrides the bundled copy.

Pickles are read with a restricted unpickler that only reconstructs NumPy arrays and plain
containers, so a data file cannot run code.
"""
from __future__ import annotations

import functools
import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch

from .errors import DatasetError
from .splits import bundled_split

# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    num_classes: int
    input_size: int
    pad: int  # random-crop padding (crop size = input size)
    flip: bool  # random horizontal flip during training
    mean: tuple  # per channel, 0..255 units; None = computed from the training split
    std: tuple
    needs_files: bool = True
    network_dataset: str = ""  # the name network builders receive (image size, classes); "" = name

    def __post_init__(self):
        if not self.network_dataset:
            object.__setattr__(self, "network_dataset", self.name)


_C10_MEAN, _C10_STD = (125.3, 123.0, 113.9), (63.0, 62.1, 66.7)
_C100_MEAN, _C100_STD = (129.3, 124.1, 112.4), (68.2, 65.4, 70.4)
_IN16_MEAN, _IN16_STD = (122.68, 116.66, 104.01), (63.22, 61.26, 65.09)

DATASETS = {
    "digits": DatasetSpec("digits", 10, 16, 2, False, None, None, needs_files=False),
    "cifar10-valid": DatasetSpec("cifar10-valid", 10, 32, 4, True, _C10_MEAN, _C10_STD, network_dataset="cifar10"),
    "cifar10": DatasetSpec("cifar10", 10, 32, 4, True, _C10_MEAN, _C10_STD),
    "cifar100": DatasetSpec("cifar100", 100, 32, 4, True, _C100_MEAN, _C100_STD),
    "imagenet16-120": DatasetSpec("imagenet16-120", 120, 16, 2, True, _IN16_MEAN, _IN16_STD),
}
_ALIASES = {
    "cifar-10": "cifar10", "cifar10valid": "cifar10-valid", "cifar-10-valid": "cifar10-valid", "cifar-100": "cifar100",
    "imagenet16": "imagenet16-120", "imagenet16_120": "imagenet16-120",
    "imagenet-16-120": "imagenet16-120", "imagenet16120": "imagenet16-120",
}

LAYOUT = """\
Expected layout under the data directory (nothing is downloaded):
  cifar10, cifar10-valid: cifar-10-batches-py/{data_batch_1..5, test_batch}
  cifar100:               cifar-100-python/{train, test}
  imagenet16-120:         ImageNet16/{train_data_batch_1..10, val_data}
  NAS-Bench-201's split files ship with the package; a cifar-split.txt,
  cifar100-test-split.txt or imagenet-16-120-test-split.txt in the data directory, in
  DATA/splits/ or in the dataset folder replaces the bundled one. `digits` needs no files."""


def canonical_name(name: str) -> str:
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    return key


def dataset_spec(name: str) -> DatasetSpec:
    return DATASETS[canonical_name(name)]


# --------------------------------------------------------------------------- bundle


@dataclass
class Split:
    images: torch.Tensor  # uint8 N×3×H×W, contiguous
    labels: torch.Tensor  # int64 N

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def subset(self, n: Optional[int], seed: int = 0) -> "Split":
        """A fixed random subset of at most `n` samples (the same for every job)."""
        if n is None or n >= len(self):
            return self
        g = torch.Generator().manual_seed(seed)
        idx = torch.randperm(len(self), generator=g)[:n].sort().values
        return Split(self.images[idx].contiguous(), self.labels[idx].contiguous())

    def to(self, device) -> "Split":
        return Split(self.images.to(device, non_blocking=True), self.labels.to(device, non_blocking=True))


@dataclass
class DatasetBundle:
    name: str
    num_classes: int
    input_size: int
    pad: int
    flip: bool
    mean: tuple  # 0..255 units
    std: tuple
    train: Split
    valid: Split
    test: Split
    source: str = ""

    def describe(self) -> str:
        return (f"{self.name}: train {len(self.train)}, valid {len(self.valid)}, test {len(self.test)}, "
                f"{self.num_classes} classes, {self.input_size}x{self.input_size}")


# --------------------------------------------------------------------------- safe pickles

_SAFE_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
    ("collections", "OrderedDict"), ("builtins", "bytearray"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # noqa: D401 - pickle API
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} (only NumPy arrays are allowed)")


def _load_pickle(path: Path, what: str) -> dict:
    if not path.is_file():
        raise DatasetError(f"{what}: missing file {path}\n{LAYOUT}")
    try:
        with open(path, "rb") as f:
            obj = _SafeUnpickler(f, encoding="latin1").load()
    except Exception as exc:  # corrupt, truncated, not a pickle, unsafe content
        raise DatasetError(f"{what}: cannot read {path}: {type(exc).__name__}: {exc}\n{LAYOUT}") from None
    if not isinstance(obj, dict):
        raise DatasetError(f"{what}: {path} holds a {type(obj).__name__}, expected a dict with 'data' and labels\n{LAYOUT}")
    return {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in obj.items()}


def _images(d: dict, path: Path, what: str, side: int) -> np.ndarray:
    data = d.get("data")
    try:
        arr = np.asarray(data)
        if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != 3 * side * side:
            raise ValueError(f"'data' is {arr.dtype} {arr.shape}, expected uint8 N×{3 * side * side}")
    except Exception as exc:
        raise DatasetError(f"{what}: {path}: {exc}\n{LAYOUT}") from None
    return arr.reshape(-1, 3, side, side)


def _labels(d: dict, key: str, n: int, path: Path, what: str) -> np.ndarray:
    if key not in d:
        raise DatasetError(f"{what}: {path} has no {key!r} entry (keys: {sorted(map(str, d))})\n{LAYOUT}")
    try:
        lab = np.asarray(d[key], dtype=np.int64).reshape(-1)
    except Exception as exc:
        raise DatasetError(f"{what}: {path}: bad {key!r}: {exc}\n{LAYOUT}") from None
    if lab.shape[0] != n:
        raise DatasetError(f"{what}: {path}: {lab.shape[0]} labels for {n} images\n{LAYOUT}")
    return lab


def _check_range(lab: np.ndarray, lo: int, hi: int, path: Path, what: str) -> None:
    if lab.size and (lab.min() < lo or lab.max() > hi):
        raise DatasetError(f"{what}: {path}: labels outside {lo}..{hi}\n{LAYOUT}")


# --------------------------------------------------------------------------- split files


def read_split_file(path: Path, keys: Sequence[str], what: str = "split file") -> dict:
    """Read one NAS-Bench-201 split file: ``{"name": ["int", ["0", "5", ...]], ...}``.

    The text is parsed with :mod:`json` (it is valid JSON) and then checked: each requested key
    must map to ``["int", [digit strings]]``. Returns ``{key: np.ndarray[int64]}``.
    """
    if not path.is_file():
        raise DatasetError(f"{what}: missing split file {path}\n{LAYOUT}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except Exception as exc:
        raise DatasetError(f"{what}: {path} is not a NAS-Bench-201 split file: {exc}\n{LAYOUT}") from None
    out = {}
    for key in keys:
        entry = raw.get(key) if isinstance(raw, dict) else None
        ok = (isinstance(entry, list) and len(entry) == 2 and entry[0] == "int" and isinstance(entry[1], list)
              and all(isinstance(s, (str, int)) and str(s).isdigit() for s in entry[1]))
        if not ok:
            raise DatasetError(f"{what}: {path} lacks a well-formed {key!r} entry "
                               f"(expected \"{key}\": [\"int\", [\"0\", \"5\", ...]])\n{LAYOUT}")
        out[key] = np.asarray([int(s) for s in entry[1]], dtype=np.int64)
    return out


def _find_split(data_dir: Path, folder: Optional[Path], filename: str) -> Optional[Path]:
    """The user's copy of a split file, or None (the bundled copy is used)."""
    candidates = [data_dir / filename, data_dir / "splits" / filename]
    if folder is not None:
        candidates += [folder / filename, folder.parent / "splits" / filename]
    for c in candidates:
        if c.is_file():
            return c
    return None


def load_split(data_dir: Path, folder: Optional[Path], filename: str, keys: Sequence[str], what: str) -> tuple:
    """``({key: indices}, source)`` from the user's split file when there is one, else the bundled copy."""
    path = _find_split(data_dir, folder, filename)
    if path is not None:
        return read_split_file(path, keys, what), str(path)
    lists = bundled_split(filename)
    return {k: np.asarray(lists[k], dtype=np.int64) for k in keys}, f"the bundled NAS-Bench-201 {filename}"


def _take(images: np.ndarray, labels: np.ndarray, idx: np.ndarray, source: str, what: str) -> Split:
    if idx.size and (idx.min() < 0 or idx.max() >= labels.shape[0]):
        raise DatasetError(f"{what}: {source} indexes image {int(idx.max())}, but only {labels.shape[0]} are "
                           f"available: the dataset folder is incomplete, or put a split file for this data in "
                           f"the data directory\n{LAYOUT}")
    return Split(torch.from_numpy(np.ascontiguousarray(images[idx])), torch.from_numpy(labels[idx].copy()))


def _whole(images: np.ndarray, labels: np.ndarray) -> Split:
    return Split(torch.from_numpy(np.ascontiguousarray(images)), torch.from_numpy(np.ascontiguousarray(labels)))


def _empty(side: int) -> Split:
    return Split(torch.empty((0, 3, side, side), dtype=torch.uint8), torch.empty((0,), dtype=torch.int64))


def _find_folder(data_dir: Path, names: Sequence[str], marker: str) -> Path:
    """The dataset folder: DATA/<name> for one of `names`, or DATA itself when it holds `marker`."""
    for n in names:
        if (data_dir / n / marker).exists():
            return data_dir / n
    if (data_dir / marker).exists():
        return data_dir
    for n in names:
        if (data_dir / n).is_dir():
            return data_dir / n  # exists but incomplete: the missing-file error names it
    return data_dir / names[0]


def _check_dir(data_dir: Optional[os.PathLike], what: str) -> Path:
    if data_dir is None:
        raise DatasetError(f"{what}: no data directory given (use --data-dir)\n{LAYOUT}")
    p = Path(data_dir).expanduser()
    if not p.is_dir():
        raise DatasetError(f"{what}: data directory {p} does not exist\n{LAYOUT}")
    return p


# --------------------------------------------------------------------------- loaders


def _read_cifar10(root: Path, what: str) -> tuple:
    """(folder, train images, train labels, test images, test labels) of cifar-10-batches-py."""
    folder = _find_folder(root, ["cifar-10-batches-py"], "data_batch_1")
    imgs, labs = [], []
    for i in range(1, 6):
        p = folder / f"data_batch_{i}"
        d = _load_pickle(p, what)
        x = _images(d, p, what, 32)
        imgs.append(x)
        labs.append(_labels(d, "labels", x.shape[0], p, what))
    p = folder / "test_batch"
    d = _load_pickle(p, what)
    test_x = _images(d, p, what, 32)
    test_y = _labels(d, "labels", test_x.shape[0], p, what)
    train_x, train_y = np.concatenate(imgs), np.concatenate(labs)
    _check_range(train_y, 0, 9, folder, what)
    _check_range(test_y, 0, 9, p, what)
    return folder, train_x, train_y, test_x, test_y


def load_cifar10_valid(data_dir) -> DatasetBundle:
    """NB201's ``cifar10-valid``: train on the ``train`` half, validate on the ``valid`` half."""
    what = "cifar10-valid"
    root = _check_dir(data_dir, what)
    folder, train_x, train_y, test_x, test_y = _read_cifar10(root, what)
    s, src = load_split(root, folder, "cifar-split.txt", ("train", "valid"), what)
    spec = DATASETS[what]
    return DatasetBundle(what, 10, 32, spec.pad, spec.flip, spec.mean, spec.std,
                         train=_take(train_x, train_y, s["train"], src, what),
                         valid=_take(train_x, train_y, s["valid"], src, what),
                         test=_whole(test_x, test_y), source=str(folder))


def load_cifar10(data_dir) -> DatasetBundle:
    """NB201's ``cifar10``: train on all 50,000 training images, report the test set; no valid split."""
    what = "cifar10"
    root = _check_dir(data_dir, what)
    folder, train_x, train_y, test_x, test_y = _read_cifar10(root, what)
    spec = DATASETS[what]
    return DatasetBundle(what, 10, 32, spec.pad, spec.flip, spec.mean, spec.std,
                         train=_whole(train_x, train_y), valid=_empty(32), test=_whole(test_x, test_y),
                         source=str(folder))


def load_cifar100(data_dir) -> DatasetBundle:
    what = "cifar100"
    root = _check_dir(data_dir, what)
    folder = _find_folder(root, ["cifar-100-python"], "train")
    p = folder / "train"
    d = _load_pickle(p, what)
    train_x = _images(d, p, what, 32)
    train_y = _labels(d, "fine_labels", train_x.shape[0], p, what)
    _check_range(train_y, 0, 99, p, what)
    p = folder / "test"
    d = _load_pickle(p, what)
    test_x = _images(d, p, what, 32)
    test_y = _labels(d, "fine_labels", test_x.shape[0], p, what)
    _check_range(test_y, 0, 99, p, what)
    s, src = load_split(root, folder, "cifar100-test-split.txt", ("xvalid", "xtest"), what)
    spec = DATASETS["cifar100"]
    return DatasetBundle("cifar100", 100, 32, spec.pad, spec.flip, spec.mean, spec.std,
                         train=_whole(train_x, train_y),
                         valid=_take(test_x, test_y, s["xvalid"], src, what),
                         test=_take(test_x, test_y, s["xtest"], src, what),
                         source=str(folder))


def _in16_part(path: Path, what: str):
    d = _load_pickle(path, what)
    x = _images(d, path, what, 16)
    y = _labels(d, "labels", x.shape[0], path, what)
    _check_range(y, 1, 1000, path, what)
    keep = y <= 120
    return x[keep], y[keep] - 1


def load_imagenet16_120(data_dir) -> DatasetBundle:
    what = "imagenet16-120"
    root = _check_dir(data_dir, what)
    folder = _find_folder(root, ["ImageNet16", "imagenet16", "ImageNet16-120"], "train_data_batch_1")
    parts = [_in16_part(folder / f"train_data_batch_{i}", what) for i in range(1, 11)]
    train_x = np.concatenate([x for x, _ in parts])
    train_y = np.concatenate([y for _, y in parts])
    val_x, val_y = _in16_part(folder / "val_data", what)
    s, src = load_split(root, folder, "imagenet-16-120-test-split.txt", ("xvalid", "xtest"), what)
    spec = DATASETS["imagenet16-120"]
    return DatasetBundle("imagenet16-120", 120, 16, spec.pad, spec.flip, spec.mean, spec.std,
                         train=_whole(train_x, train_y),
                         valid=_take(val_x, val_y, s["xvalid"], src, what),
                         test=_take(val_x, val_y, s["xtest"], src, what),
                         source=str(folder))


def digits_images(size: int = 16) -> tuple:
    """scikit-learn's digits as uint8 N×3×size×size (deterministic bilinear upsampling) and labels."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # pragma: no cover - scikit-learn is a dependency of the dev/data extras
        raise DatasetError("digits: scikit-learn is not installed (pip install 'nader-toolchain[data]')") from None
    d = load_digits()
    x = torch.from_numpy(np.asarray(d.images, dtype=np.float64) * (255.0 / 16.0)).unsqueeze(1)  # N,1,8,8
    x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x.round().clamp_(0, 255).to(torch.uint8).expand(-1, 3, -1, -1).contiguous()
    return x, torch.from_numpy(np.asarray(d.target, dtype=np.int64))


def load_digits_bundle(size: int = 16) -> DatasetBundle:
    x, y = digits_images(size)
    n = y.shape[0]
    perm = torch.from_numpy(np.random.Generator(np.random.PCG64(0)).permutation(n))
    n_train, n_valid = int(n * 0.6), int(n * 0.2)
    tr, va, te = perm[:n_train], perm[n_train:n_train + n_valid], perm[n_train + n_valid:]
    train = Split(x[tr].contiguous(), y[tr].contiguous())
    f = train.images.double()
    mean = tuple(round(v, 4) for v in f.mean(dim=(0, 2, 3)).tolist())
    std = tuple(round(v, 4) for v in f.std(dim=(0, 2, 3)).tolist())
    spec = DATASETS["digits"]
    return DatasetBundle("digits", 10, size, spec.pad, spec.flip, mean, std, train=train,
                         valid=Split(x[va].contiguous(), y[va].contiguous()),
                         test=Split(x[te].contiguous(), y[te].contiguous()), source="sklearn.datasets.load_digits")


_LOADERS = {
    "cifar10-valid": load_cifar10_valid,
    "cifar10": load_cifar10,
    "cifar100": load_cifar100,
    "imagenet16-120": load_imagenet16_120,
}


@functools.lru_cache(maxsize=2)
def _cached(name: str, data_dir: Optional[str]) -> DatasetBundle:
    if name == "digits":
        return load_digits_bundle()
    return _LOADERS[name](data_dir)


def load_dataset(name: str, data_dir=None) -> DatasetBundle:
    """Load a dataset by name (cached per process: several seeds share one copy).

    Raises :class:`DatasetError` with the expected layout when files are missing or corrupt.
    """
    key = canonical_name(name)
    resolved = None if key == "digits" or data_dir is None else str(Path(data_dir).expanduser().resolve())
    return _cached(key, resolved)


def check_dataset(name: str, data_dir=None) -> None:
    """Cheap up-front check that a dataset's files are present (no decoding; a split file of the
    user's overrides the bundled copy, so none is required)."""
    key = canonical_name(name)
    if key == "digits":
        return
    what = key
    root = _check_dir(data_dir, what)
    if key in ("cifar10", "cifar10-valid"):
        folder = _find_folder(root, ["cifar-10-batches-py"], "data_batch_1")
        files = [folder / f"data_batch_{i}" for i in range(1, 6)] + [folder / "test_batch"]
    elif key == "cifar100":
        folder = _find_folder(root, ["cifar-100-python"], "train")
        files = [folder / "train", folder / "test"]
    else:
        folder = _find_folder(root, ["ImageNet16", "imagenet16", "ImageNet16-120"], "train_data_batch_1")
        files = [folder / f"train_data_batch_{i}" for i in range(1, 11)] + [folder / "val_data"]
    for f in files:
        if not f.is_file():
            raise DatasetError(f"{what}: missing file {f}\n{LAYOUT}")
        try:  # present but unreadable (permissions, a broken mount) fails every trial too
            with f.open("rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise DatasetError(f"{what}: cannot read {f}: {exc.strerror or exc}; make the data folder readable "
                               f"by this user") from None
