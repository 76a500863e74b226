"""NAS-Bench-201's split files, bundled with the package (standard library only).

NAS-Bench-201 (Dong & Yang, ICLR 2020) publishes three index lists that define its splits:

* ``cifar-split.txt``: the CIFAR-10 train set (50,000) halved into ``train`` / ``valid``;
* ``cifar100-test-split.txt``: the CIFAR-100 test set (10,000) halved into ``xvalid`` / ``xtest``;
* ``imagenet-16-120-test-split.txt``: the ImageNet16-120 validation images (6,000) halved into
  ``xvalid`` / ``xtest``.

Each file is a partition of ``range(size)`` into two sorted lists, so one bit per index says
which list it belongs to. ``nb201_splits.json`` holds those bitsets (base64, bit *i* is bit
``i % 8`` of byte ``i // 8``; 1 = the second list), the source file's SHA-256 and the list
sizes: 11 KB instead of 560 KB. ``scripts/pack_nb201_splits.py`` derives it from the published
files; the tests check the round trip against them.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import json
from importlib import resources
from typing import Dict, List, Sequence

BUNDLE = "nb201_splits.json"
FORMAT = 1


def pack(parts: Dict[str, Sequence[int]], source: bytes = b"") -> dict:
    """The bundle entry of one split file given its two index lists (in the file's key order)."""
    keys = list(parts)
    if len(keys) != 2:
        raise ValueError(f"expected two lists, got {keys}")
    first, second = (sorted(int(i) for i in parts[k]) for k in keys)
    size = len(first) + len(second)
    if sorted(first + second) != list(range(size)):
        raise ValueError("the two lists are not a partition of 0..size-1")
    if [int(i) for i in parts[keys[0]]] != first or [int(i) for i in parts[keys[1]]] != second:
        raise ValueError("the lists are not sorted; a bitset would not reproduce their order")
    bits = bytearray((size + 7) // 8)
    for i in second:
        bits[i >> 3] |= 1 << (i & 7)
    return {"size": size, "keys": keys, "counts": [len(first), len(second)],
            "sha256": hashlib.sha256(source).hexdigest(), "bits": base64.b64encode(bytes(bits)).decode("ascii")}


def unpack(entry: dict) -> Dict[str, List[int]]:
    """The two sorted index lists of one bundle entry, checked against the recorded sizes."""
    size, keys = int(entry["size"]), list(entry["keys"])
    bits = base64.b64decode(entry["bits"])
    if len(bits) != (size + 7) // 8:
        raise ValueError(f"bitset of {len(bits)} bytes for {size} indices")
    second = [i for i in range(size) if bits[i >> 3] >> (i & 7) & 1]
    chosen = set(second)
    first = [i for i in range(size) if i not in chosen]
    if [len(first), len(second)] != list(entry["counts"]):
        raise ValueError(f"list sizes {len(first)}/{len(second)} differ from the recorded {entry['counts']}")
    return {keys[0]: first, keys[1]: second}


@functools.lru_cache(maxsize=1)
def _bundle() -> dict:
    text = resources.files(__package__).joinpath(BUNDLE).read_text(encoding="utf-8")
    data = json.loads(text)
    if data.get("format") != FORMAT:
        raise ValueError(f"{BUNDLE}: unknown format {data.get('format')!r}")
    return data["files"]


@functools.lru_cache(maxsize=4)
def bundled_split(filename: str) -> Dict[str, List[int]]:
    """The index lists of the bundled copy of NAS-Bench-201's `filename` (e.g. ``cifar-split.txt``)."""
    files = _bundle()
    if filename not in files:
        raise KeyError(f"no bundled split file {filename!r}; bundled: {', '.join(sorted(files))}")
    return unpack(files[filename])
