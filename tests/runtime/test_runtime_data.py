"""Datasets from local files in their real formats (written here), splits, errors, digits."""
from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
import torch

from nader.runtime import data as D
from nader.runtime.errors import DatasetError

import runtime_helpers as H


@pytest.fixture(autouse=True)
def _no_cache():
    D._cached.cache_clear()
    yield
    D._cached.cache_clear()


def _as_chw(flat, side):
    return torch.from_numpy(flat.reshape(-1, 3, side, side))


def test_cifar10_valid_reads_the_users_split_file(tmp_path):
    ref = H.write_cifar10(tmp_path)  # its own cifar-split.txt overrides the bundled one
    b = D.load_dataset("cifar10-valid", tmp_path)
    assert (b.num_classes, b.input_size, b.pad, b.flip) == (10, 32, 4, True)
    assert b.train.images.dtype == torch.uint8 and b.train.images.shape == (50, 3, 32, 32)
    # train/valid are the split file's halves of the train set, in the file's order
    assert torch.equal(b.train.images, _as_chw(ref["train_x"][ref["train_idx"]], 32))
    assert torch.equal(b.train.labels, torch.from_numpy(ref["train_y"][ref["train_idx"]]))
    assert torch.equal(b.valid.images, _as_chw(ref["train_x"][ref["valid_idx"]], 32))
    assert torch.equal(b.valid.labels, torch.from_numpy(ref["train_y"][ref["valid_idx"]]))
    # test = the whole test batch
    assert torch.equal(b.test.images, _as_chw(ref["test_x"], 32))
    assert b.test.labels.tolist() == ref["test_y"].tolist()
    assert b.mean == pytest.approx((125.3, 123.0, 113.9))
    assert b.name == "cifar10-valid"


def test_cifar10_trains_on_all_50k_and_reports_test_without_split_files(tmp_path):
    ref = H.write_cifar10(tmp_path, split=False)
    b = D.load_dataset("cifar10", tmp_path)
    assert b.name == "cifar10" and b.num_classes == 10
    assert torch.equal(b.train.images, _as_chw(ref["train_x"], 32))  # every training image, in file order
    assert b.train.labels.tolist() == ref["train_y"].tolist()
    assert len(b.valid) == 0 and b.valid.images.shape[1:] == (3, 32, 32)
    assert torch.equal(b.test.images, _as_chw(ref["test_x"], 32))
    D.check_dataset("cifar10", tmp_path)
    D.check_dataset("cifar10-valid", tmp_path)  # the bundled split file stands in


def test_cifar10_accepts_dataset_folder_and_splits_subfolder(tmp_path):
    H.write_cifar10(tmp_path)
    (tmp_path / "splits").mkdir()
    os.replace(tmp_path / "cifar-split.txt", tmp_path / "splits" / "cifar-split.txt")
    b = D.load_dataset("cifar10-valid", tmp_path)
    assert len(b.train) == 50 and len(b.valid) == 50


def test_cifar100_valid_test_are_halves_of_test_set(tmp_path):
    ref = H.write_cifar100(tmp_path)
    b = D.load_dataset("cifar100", tmp_path)
    assert b.num_classes == 100 and len(b.train) == 60
    assert torch.equal(b.train.images, _as_chw(ref["train_x"], 32))
    assert b.valid.labels.tolist() == ref["test_y"][ref["xvalid"]].tolist()
    assert torch.equal(b.test.images, _as_chw(ref["test_x"][ref["xtest"]], 32))


def test_imagenet16_keeps_first_120_classes_zero_based(tmp_path):
    ref = H.write_imagenet16(tmp_path)
    b = D.load_dataset("imagenet16-120", tmp_path)
    assert (b.num_classes, b.input_size, b.pad) == (120, 16, 2)
    keep = ref["train_y"] <= 120
    assert len(b.train) == int(keep.sum())
    assert b.train.labels.tolist() == (ref["train_y"][keep] - 1).tolist()
    assert torch.equal(b.train.images, _as_chw(ref["train_x"][keep], 16))
    assert int(b.train.labels.max()) <= 119 and int(b.train.labels.min()) >= 0
    vkeep = ref["val_y"] <= 120
    vx, vy = ref["val_x"][vkeep], ref["val_y"][vkeep] - 1
    assert b.valid.labels.tolist() == vy[ref["xvalid"]].tolist()
    assert torch.equal(b.test.images, _as_chw(vx[ref["xtest"]], 16))


@pytest.mark.parametrize("name,writer", [("cifar10", H.write_cifar10), ("cifar100", H.write_cifar100),
                                         ("imagenet16-120", H.write_imagenet16)])
def test_missing_file_is_one_clear_error(tmp_path, name, writer):
    writer(tmp_path)
    victim = {"cifar10": "cifar-10-batches-py/data_batch_3", "cifar100": "cifar-100-python/test",
              "imagenet16-120": "ImageNet16/train_data_batch_7"}[name]
    (tmp_path / victim).unlink()
    with pytest.raises(DatasetError) as ei:
        D.load_dataset(name, tmp_path)
    msg = str(ei.value)
    assert str(tmp_path / victim) in msg and "Expected layout" in msg
    with pytest.raises(DatasetError):
        D.check_dataset(name, tmp_path)


def test_missing_data_dir_and_missing_split(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        D.load_dataset("cifar10", tmp_path / "nope")
    with pytest.raises(DatasetError, match="no data directory"):
        D.load_dataset("cifar100", None)
    H.write_cifar10(tmp_path)
    (tmp_path / "cifar-split.txt").unlink()
    # the bundled split indexes the real 50,000 images: a 100-image folder is incomplete
    with pytest.raises(DatasetError, match=r"bundled NAS-Bench-201 cifar-split.txt indexes image \d+, but only 100"):
        D.load_dataset("cifar10-valid", tmp_path)


def test_corrupt_pickle_and_wrong_shape(tmp_path):
    H.write_cifar10(tmp_path)
    p = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    p.write_bytes(p.read_bytes()[:1000])  # truncated
    with pytest.raises(DatasetError, match="cannot read"):
        D.load_dataset("cifar10", tmp_path)
    with open(p, "wb") as f:
        pickle.dump({b"data": np.zeros((3, 100), np.uint8), b"labels": [0, 1, 2]}, f)
    with pytest.raises(DatasetError, match="expected uint8"):
        D.load_dataset("cifar10", tmp_path)
    with open(p, "wb") as f:
        pickle.dump({b"data": np.zeros((3, 3072), np.uint8), b"labels": [0, 1]}, f)
    with pytest.raises(DatasetError, match="2 labels for 3 images"):
        D.load_dataset("cifar10", tmp_path)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo should-not-run",))


def test_pickle_cannot_run_code(tmp_path):
    H.write_cifar10(tmp_path)
    with open(tmp_path / "cifar-10-batches-py" / "test_batch", "wb") as f:
        pickle.dump({b"data": _Evil(), b"labels": []}, f)
    with pytest.raises(DatasetError, match="refusing to load"):
        D.load_dataset("cifar10", tmp_path)


def test_bad_split_files(tmp_path):
    H.write_cifar10(tmp_path)
    sp = tmp_path / "cifar-split.txt"
    sp.write_text("{not json")
    with pytest.raises(DatasetError, match="not a NAS-Bench-201 split file"):
        D.load_dataset("cifar10-valid", tmp_path)
    sp.write_text(json.dumps({"train": ["int", ["0", "x"]], "valid": ["int", ["1"]]}))
    with pytest.raises(DatasetError, match="well-formed 'train'"):
        D.load_dataset("cifar10-valid", tmp_path)
    sp.write_text(json.dumps({"train": ["int", ["0", "99999"]], "valid": ["int", ["1"]]}))
    with pytest.raises(DatasetError, match="indexes image 99999, but only 100"):
        D.load_dataset("cifar10-valid", tmp_path)


def test_unknown_dataset():
    with pytest.raises(DatasetError, match="unknown dataset"):
        D.load_dataset("mnist")
    assert D.canonical_name("CIFAR-10") == "cifar10"
    assert D.canonical_name("cifar10-valid") == "cifar10-valid"
    assert D.dataset_spec("cifar10-valid").network_dataset == "cifar10"
    assert D.canonical_name("ImageNet16-120") == "imagenet16-120"


def test_digits_embedded_default():
    b = D.load_dataset("digits")
    assert (b.num_classes, b.input_size, b.flip) == (10, 16, False)
    assert b.train.images.dtype == torch.uint8 and b.train.images.shape[1:] == (3, 16, 16)
    assert len(b.train) + len(b.valid) + len(b.test) == 1797
    assert (len(b.train), len(b.valid), len(b.test)) == (1078, 359, 360)
    # grey replicated to three channels
    assert torch.equal(b.train.images[:, 0], b.train.images[:, 2])
    assert int(b.train.images.max()) > 200
    # deterministic: a fresh load gives identical tensors and split
    D._cached.cache_clear()
    b2 = D.load_dataset("digits")
    assert torch.equal(b.train.images, b2.train.images) and torch.equal(b.test.labels, b2.test.labels)
    # splits are disjoint (compare raw images as bytes)
    tr = {bytes(x.numpy().tobytes()) + bytes([int(y)]) for x, y in zip(b.train.images, b.train.labels)}
    te = [bytes(x.numpy().tobytes()) + bytes([int(y)]) for x, y in zip(b.test.images, b.test.labels)]
    assert sum(t in tr for t in te) < 5  # a few digits are pixel-identical across samples


def test_split_subset_is_fixed():
    b = D.load_dataset("digits")
    s1, s2 = b.train.subset(100), b.train.subset(100)
    assert len(s1) == 100 and torch.equal(s1.labels, s2.labels)
    assert b.train.subset(None) is b.train


@pytest.mark.parametrize("fname,keys,size", [("cifar-split.txt", ("train", "valid"), 25000),
                                             ("cifar100-test-split.txt", ("xvalid", "xtest"), 5000),
                                             ("imagenet-16-120-test-split.txt", ("xvalid", "xtest"), 3000)])
def test_real_nb201_split_files(compat_dir, fname, keys, size):
    path = compat_dir / "splits" / fname
    if not path.is_file():
        pytest.skip(f"{path} not present")
    s = D.read_split_file(path, keys)
    a, b = (s[k] for k in keys)
    assert len(a) == len(b) == size
    assert not set(a.tolist()) & set(b.tolist())
    assert sorted(a.tolist() + b.tolist()) == list(range(2 * size))
