"""Input pipeline: whole dataset in memory as one uint8 tensor, augmentation batch-wise on device.

Per batch, one gather does random crop (with zero padding) and horizontal flip together for
every sample at once; a second fused op converts to float and normalises. No per-sample Python
runs in the hot loop. With ``channels_last`` the uint8 batch is laid out N×H×W×C before the
conversion to float (a quarter of the bytes), and normalisation keeps that layout.

Randomness comes from a dedicated ``torch.Generator`` seeded from (seed, epoch), so an epoch's
order and augmentation are reproducible after a resume without saving generator state.
"""
from __future__ import annotations

from typing import Iterator, Optional, Tuple

import torch
import torch.nn.functional as F

from .data import Split


def augment_indices(batch: int, size: int, pad: int, flip: bool, gen: torch.Generator, device) -> Tuple[torch.Tensor, torch.Tensor]:
    """Row and column indices (into the padded image) for a random crop + optional flip.

    Returns ``rows`` (B×size) and ``cols`` (B×size), each within ``0 .. size+2*pad-1``.
    """
    ar = torch.arange(size, device=device)
    if pad > 0:
        off = torch.randint(0, 2 * pad + 1, (2, batch), generator=gen, device=device)
        rows = off[0, :, None] + ar
        cols = off[1, :, None] + ar
    else:
        rows = ar.expand(batch, size)
        cols = ar.expand(batch, size)
    if flip:
        f = torch.rand(batch, generator=gen, device=device) < 0.5
        cols = torch.where(f[:, None], cols.flip(1), cols)
    return rows, cols


def crop_flip(x: torch.Tensor, pad: int, flip: bool, gen: torch.Generator, channels_last: bool = False) -> torch.Tensor:
    """Random-crop (zero padding `pad`) and randomly flip a uint8 batch N×C×H×W, vectorised.

    One ``gather`` over the flattened padded images does both (a flip is a crop whose column
    indices run backwards). The output has the input's shape; with ``channels_last`` its memory
    is N×H×W×C.
    """
    b, c, h, w = x.shape
    assert h == w, "square images expected"
    xp = F.pad(x, (pad, pad, pad, pad)) if pad > 0 else x
    wp = w + 2 * pad
    rows, cols = augment_indices(b, h, pad, flip, gen, x.device)
    idx = (rows[:, :, None] * wp + cols[:, None, :]).view(b, 1, h * w).expand(b, c, h * w)
    out = xp.reshape(b, c, -1).gather(2, idx).view(b, c, h, w)
    if channels_last:
        out = out.contiguous(memory_format=torch.channels_last)
    return out


class Normalizer:
    """uint8 → float, (x - mean) / std, in one fused multiply-add per element."""

    def __init__(self, mean, std, device, dtype=torch.float32):
        std_t = torch.tensor(std, dtype=torch.float64)
        mean_t = torch.tensor(mean, dtype=torch.float64)
        self.scale = (1.0 / std_t).to(device=device, dtype=dtype).view(1, -1, 1, 1)
        self.shift = (-mean_t / std_t).to(device=device, dtype=dtype).view(1, -1, 1, 1)
        self.dtype = dtype

    def __call__(self, x_u8: torch.Tensor) -> torch.Tensor:
        # addcmul keeps the input's memory format (channels-last stays channels-last)
        return torch.addcmul(self.shift, x_u8.to(self.dtype), self.scale)


class DeviceLoader:
    """Batches from a :class:`Split` that already lives on the training device."""

    def __init__(self, split: Split, batch_size: int, mean, std, *, train: bool, pad: int = 0, flip: bool = False,
                 channels_last: bool = False, seed: int = 0):
        self.split = split
        self.batch_size = int(batch_size)
        self.train = train
        self.pad = pad if train else 0
        self.flip = flip and train
        self.channels_last = channels_last
        self.seed = int(seed)
        self.device = split.images.device
        self.norm = Normalizer(mean, std, self.device)

    def __len__(self) -> int:
        n = len(self.split)
        full, rem = divmod(n, self.batch_size)
        # a training batch of one sample breaks BatchNorm: it is dropped
        return full + (1 if rem > (1 if self.train else 0) else 0)

    def _generator(self, epoch: int) -> torch.Generator:
        g = torch.Generator(device=self.device)
        g.manual_seed((self.seed * 1_000_003 + epoch * 7919) % (2**63 - 1))
        return g

    def epoch(self, epoch: int = 0) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        n = len(self.split)
        images, labels = self.split.images, self.split.labels
        if self.train:
            g = self._generator(epoch)
            order = torch.randperm(n, generator=g, device=self.device)
        else:
            g, order = None, None
        for i in range(len(self)):
            lo, hi = i * self.batch_size, min(n, (i + 1) * self.batch_size)
            if order is not None:
                idx = order[lo:hi]
                xb, yb = images.index_select(0, idx), labels.index_select(0, idx)
                xb = crop_flip(xb, self.pad, self.flip, g, self.channels_last)
            else:
                xb, yb = images[lo:hi], labels[lo:hi]
                if self.channels_last:
                    xb = xb.contiguous(memory_format=torch.channels_last)
            yield self.norm(xb), yb

    __iter__ = lambda self: self.epoch(0)  # noqa: E731


def place_split(split: Split, device: torch.device, limit: Optional[int] = None) -> Split:
    """Copy a split (optionally a fixed subset) to the training device, once."""
    s = split.subset(limit)
    if device.type == "cuda":
        return Split(s.images.to(device), s.labels.to(device))
    return s
