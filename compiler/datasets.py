"""The datasets networks are built for: input resolution and number of classes, by name or alias."""
from __future__ import annotations

from dataclasses import dataclass

from nader.compiler.errors import BuildError


@dataclass(frozen=True)
class Dataset:
    name: str
    input_size: int
    num_classes: int


DATASETS: dict[str, Dataset] = {d.name: d for d in [
    Dataset("cifar10", 32, 10),
    Dataset("cifar100", 32, 100),
    Dataset("imagenet16-120", 16, 120),
    Dataset("imagenet", 224, 1000),
    Dataset("digits", 16, 10),  # the runtime's file-free smoke-test dataset
]}
_DATASET_ALIASES = {
    "cifar-10": "cifar10", "cifar10-valid": "cifar10", "cifar-100": "cifar100",
    "imagenet16": "imagenet16-120", "imagenet16_120": "imagenet16-120", "imagenet-16-120": "imagenet16-120",
    "imagenet16120": "imagenet16-120", "imagenet-1k": "imagenet", "imagenet1k": "imagenet", "in1k": "imagenet",
}


def dataset_info(name: str) -> Dataset:
    key = (name or "").strip().lower()
    for prefix in ("nas-bench-201-", "nasbench201-", "nb201-"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    key = _DATASET_ALIASES.get(key, key)
    if key not in DATASETS:
        raise BuildError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    return DATASETS[key]
