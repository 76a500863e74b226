"""NAS-Bench-201's split files ship with the package: bitset round trip, the derivation script,
and a standard `cifar-10-batches-py` folder that needs nothing else (API and `nader-search eval`)."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

from conftest import REPO_ROOT
from nader.cli import main
from nader.runtime import data as D
from nader.runtime import splits as S

import runtime_helpers as H

PUBLISHED = {"cifar-split.txt": (("train", "valid"), 50_000),
             "cifar100-test-split.txt": (("xvalid", "xtest"), 10_000),
             "imagenet-16-120-test-split.txt": (("xvalid", "xtest"), 6_000)}


@pytest.fixture(autouse=True)
def _no_cache():
    D._cached.cache_clear()
    yield
    D._cached.cache_clear()


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_bundled_split_is_a_half_and_half_partition(name):
    keys, size = PUBLISHED[name]
    lists = S.bundled_split(name)
    assert list(lists) == list(keys)
    a, b = lists[keys[0]], lists[keys[1]]
    assert len(a) == len(b) == size // 2
    assert sorted(a + b) == list(range(size))
    assert a == sorted(a) and b == sorted(b)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_bundle_round_trips_the_published_files(compat_dir, name):
    path = compat_dir / "splits" / name
    keys, _ = PUBLISHED[name]
    published = D.read_split_file(path, keys)
    bundled = S.bundled_split(name)
    for k in keys:
        assert bundled[k] == published[k].tolist()
    entry = json.loads((REPO_ROOT / "runtime" / S.BUNDLE).read_text())["files"][name]
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_pack_script_reproduces_the_committed_bundle(compat_dir, tmp_path):
    out = tmp_path / "bundle.json"
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "pack_nb201_splits.py"),
                           str(compat_dir / "splits"), "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (REPO_ROOT / "runtime" / S.BUNDLE).read_text()


def test_pack_refuses_what_a_bitset_cannot_hold():
    with pytest.raises(ValueError, match="partition"):
        S.pack({"a": [0, 1], "b": [1, 2]})
    with pytest.raises(ValueError, match="partition"):
        S.pack({"a": [0], "b": [2]})
    with pytest.raises(ValueError, match="not sorted"):
        S.pack({"a": [2, 0], "b": [1, 3]})
    entry = S.pack({"a": [0, 3, 4], "b": [1, 2]})
    assert S.unpack(entry) == {"a": [0, 3, 4], "b": [1, 2]}
    entry["counts"] = [2, 3]
    with pytest.raises(ValueError, match="differ from the recorded"):
        S.unpack(entry)


@pytest.fixture(scope="module")
def full_cifar(tmp_path_factory):
    """A standard-format cifar-10-batches-py folder with 50,000 training images and nothing else."""
    root = tmp_path_factory.mktemp("cifar")
    H.write_full_size_cifar10(root)
    return root


def test_cifar10_valid_uses_the_bundled_split(full_cifar):
    b = D.load_dataset("cifar10-valid", full_cifar)
    lists = S.bundled_split("cifar-split.txt")
    assert H.image_ids(b.train.images) == lists["train"]
    assert H.image_ids(b.valid.images) == lists["valid"]
    assert b.valid.labels.tolist() == [i % 10 for i in lists["valid"]]
    assert len(b.test) == 20
    full = D.load_dataset("cifar10", full_cifar)
    assert H.image_ids(full.train.images) == list(range(50_000)) and len(full.valid) == 0


def test_a_split_file_in_the_data_directory_overrides_the_bundled_one(full_cifar, tmp_path):
    (tmp_path / "cifar-10-batches-py").symlink_to(full_cifar / "cifar-10-batches-py")
    H.write_split(tmp_path / "cifar-split.txt", {"train": [5, 1, 40_000], "valid": [7]})
    b = D.load_dataset("cifar10-valid", tmp_path)
    assert H.image_ids(b.train.images) == [5, 1, 40_000] and H.image_ids(b.valid.images) == [7]


def _eval(*args):
    res = CliRunner().invoke(main, ["eval", *map(str, args), "--format", "json", "--threads", "1"],
                             catch_exceptions=False)
    assert "Traceback" not in res.output
    return res


def test_eval_of_a_plain_cifar10_folder_with_the_dsl_network(tmp_path):
    """`cifar10`: the NB201 ResNet from block text trains on a folder holding only the standard files."""
    H.write_cifar10(tmp_path, per_batch=8, n_test=10, split=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cifar-10-batches-py"]
    res = _eval(REPO_ROOT / "examples" / "resnet_basic.nad", "--dataset", "cifar10", "--data-dir", tmp_path,
                "--seeds", "1", "--epochs", "1", "--batch-size", "16")
    assert res.exit_code == 0, res.output
    (rec,) = json.loads(res.stdout)
    assert rec["status"] == "ok" and rec["test_acc"] is not None and rec["valid_acc"] is None
    assert rec["params"] > 100_000  # the real network, not a stand-in


def test_eval_of_a_plain_cifar10_folder_in_the_cifar10_valid_setting(full_cifar, tmp_path):
    """`cifar10-valid` on the same kind of folder: the bundled split gives train and valid halves
    (a small stand-in network keeps this quick; the quick preset caps the images used)."""
    arch = tmp_path / "tiny.json"
    arch.write_text(json.dumps({"width": 2}))
    res = _eval(arch, "--dataset", "cifar10-valid", "--data-dir", full_cifar, "--seeds", "1", "--epochs", "1",
                "--builder", "runtime_helpers:tiny_builder")
    assert res.exit_code == 0, res.output
    (rec,) = json.loads(res.stdout)
    assert rec["status"] == "ok" and rec["valid_acc"] is not None and rec["test_acc"] is not None
