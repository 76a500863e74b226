"""The device-side input pipeline against a plain per-sample reference."""
from __future__ import annotations

import collections

import pytest
import torch
import torch.nn.functional as F

from nader.runtime.data import Split
from nader.runtime.pipeline import DeviceLoader, Normalizer, augment_indices, crop_flip


def _reference(x, rows, cols, pad):
    """Per-sample crop + flip, read back from the index tensors (offset = first index; flipped when
    the column indices decrease)."""
    out = []
    h = x.shape[-1]
    for i in range(x.shape[0]):
        img = F.pad(x[i], (pad, pad, pad, pad))
        oy = int(rows[i, 0])
        flipped = int(cols[i, 0]) > int(cols[i, -1])
        ox = int(cols[i, -1]) if flipped else int(cols[i, 0])
        crop = img[:, oy:oy + h, ox:ox + h]
        out.append(crop.flip(-1) if flipped else crop)
    return torch.stack(out)


@pytest.mark.parametrize("pad,flip", [(4, True), (2, False), (0, True)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_crop_flip_matches_per_sample_reference(pad, flip, channels_last):
    x = torch.randint(0, 256, (64, 3, 8, 8), dtype=torch.uint8)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    out = crop_flip(x, pad, flip, g1, channels_last=channels_last)
    rows, cols = augment_indices(64, 8, pad, flip, g2, x.device)
    assert out.shape == x.shape and out.dtype == torch.uint8
    assert torch.equal(out, _reference(x, rows, cols, pad))
    if channels_last:
        assert out.is_contiguous(memory_format=torch.channels_last)
    # the randomness is real: offsets cover the range, about half the images flip
    if pad:
        assert set(rows[:, 0].tolist()) == set(range(2 * pad + 1))
    n_flip = int((cols[:, 0] > cols[:, -1]).sum())
    assert (10 < n_flip < 54) if flip else n_flip == 0


def test_normalizer():
    x = torch.randint(0, 256, (4, 3, 5, 5), dtype=torch.uint8)
    mean, std = (120.0, 110.0, 100.0), (60.0, 65.0, 70.0)
    got = Normalizer(mean, std, "cpu")(x)
    want = (x.double() - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
    assert got.dtype == torch.float32
    assert torch.allclose(got.double(), want, atol=1e-5)
    cl = Normalizer(mean, std, "cpu")(x.contiguous(memory_format=torch.channels_last))
    assert cl.is_contiguous(memory_format=torch.channels_last)


def _split(n=50):
    imgs = torch.arange(n, dtype=torch.uint8).view(n, 1, 1, 1).expand(n, 3, 4, 4).contiguous()
    return Split(imgs, torch.arange(n))


def test_train_loader_visits_every_sample_once_and_is_reproducible():
    s = _split(50)
    ld = DeviceLoader(s, 16, (0, 0, 0), (1, 1, 1), train=True, pad=0, flip=True, seed=3)
    assert len(ld) == 4  # 16+16+16+2
    labels = [y for _, y in ld.epoch(1)]
    assert sorted(torch.cat(labels).tolist()) == list(range(50))
    x, y = next(iter(ld.epoch(1)))
    # images follow their labels (constant images equal to their index)
    assert torch.equal(x[:, 0, 0, 0].long(), y)
    again = torch.cat([y for _, y in ld.epoch(1)])
    other = torch.cat([y for _, y in ld.epoch(2)])
    assert torch.equal(torch.cat(labels), again)
    assert not torch.equal(again, other)


def test_singleton_last_training_batch_is_dropped_not_eval():
    s = _split(33)
    assert len(DeviceLoader(s, 16, (0,) * 3, (1,) * 3, train=True)) == 2
    ev = DeviceLoader(s, 16, (0,) * 3, (1,) * 3, train=False)
    assert len(ev) == 3
    assert torch.cat([y for _, y in ev.epoch(0)]).tolist() == list(range(33))  # in order, complete


def test_eval_loader_does_not_augment():
    x = torch.randint(0, 256, (20, 3, 8, 8), dtype=torch.uint8)
    s = Split(x, torch.zeros(20, dtype=torch.long))
    ld = DeviceLoader(s, 8, (0,) * 3, (1,) * 3, train=False, pad=4, flip=True)
    got = torch.cat([b for b, _ in ld.epoch(0)])
    assert torch.equal(got, x.float())


def test_augmentation_statistics_over_an_epoch():
    # a single bright pixel in the corner moves with the crop and flip
    n = 400
    x = torch.zeros(n, 3, 8, 8, dtype=torch.uint8)
    x[:, :, 0, 0] = 255
    ld = DeviceLoader(Split(x, torch.zeros(n, dtype=torch.long)), 100, (0,) * 3, (1,) * 3, train=True, pad=2,
                      flip=True, seed=1)
    where = collections.Counter()
    for b, _ in ld.epoch(0):
        for img in b[:, 0]:
            nz = img.nonzero()
            where[tuple(nz[0].tolist()) if len(nz) else None] += 1
    assert where[None] > 0  # shifted out of the crop sometimes
    cols = {k[1] for k in where if k is not None}
    assert any(c >= 5 for c in cols) and any(c <= 2 for c in cols)  # flipped and not flipped
