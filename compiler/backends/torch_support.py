"""The PyTorch pieces that built modules use and standalone generated files copy.

This module imports only torch. Built blocks and networks import it; `--emit torch`
copies its text below the marker into the generated file, so a generated model and
a built one run the very same code.
"""
# --- standalone source starts here ---
import torch
import torch.nn.functional as F
from torch import nn


def crop_same(y, h, w, sh, sw):
    """Crop the overshoot of symmetric padding so the result is ceil(h/sh) x ceil(w/sw)."""
    return y[..., : -(-h // sh), : -(-w // sw)]


def require_4d(x, op):
    if x.dim() != 4:
        raise RuntimeError(f"{op} takes a 4-d (B,C,H,W) tensor, got {x.dim()}-d {tuple(x.shape)}")
    return x


class DropPath(nn.Module):
    """Stochastic depth: zero whole samples with probability `prob` in training."""

    def __init__(self, prob=0.0):
        super().__init__()
        self.prob = float(prob)

    def forward(self, x):
        if not self.training or self.prob <= 0.0:
            return x
        keep = 1.0 - self.prob
        mask = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(keep)
        return x * mask / keep

    def extra_repr(self):
        return f"prob={self.prob}"


class StagedNetwork(nn.Module):
    """NADER's staged network: stem, layer1, downsample1, layer2, ..., avg_pool, fc."""

    def __init__(self, stem, stages, downsamples, in_features, num_classes, lastact=False):
        super().__init__()
        self.stem = stem
        self.num_stages = len(stages)
        for i, blocks in enumerate(stages, 1):
            setattr(self, f"layer{i}", nn.Sequential(*blocks))
            if i <= len(downsamples):
                setattr(self, f"downsample{i}", downsamples[i - 1])
        # NAS-Bench-201's network ends its last stage with BN-ReLU (`lastact`); NADER's does not
        self.lastact = nn.Sequential(nn.BatchNorm2d(in_features), nn.ReLU()) if lastact else None
        self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x):
        h = self.stem(x)
        for i in range(1, self.num_stages + 1):
            h = getattr(self, f"layer{i}")(h)
            if i < self.num_stages:
                h = getattr(self, f"downsample{i}")(h)
        if self.lastact is not None:
            h = self.lastact(h)
        h = self.avg_pool(h)
        return self.fc(torch.flatten(h, 1))


class FactorizedReduce(nn.Module):
    """DARTS' FactorizedReduce: ReLU, two 1x1 stride-2 convolutions (one shifted by a pixel), BN."""

    def __init__(self, C_in, C_out):
        super().__init__()
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.conv_2 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.bn = nn.BatchNorm2d(C_out)

    def forward(self, x):
        x = self.relu(x)
        shifted = x[:, :, 1:, 1:]
        if x.shape[2] % 2 or x.shape[3] % 2:  # odd sizes: pad so both halves are ceil(H/2)
            shifted = F.pad(shifted, (0, x.shape[3] % 2, 0, x.shape[2] % 2))
        return self.bn(torch.cat([self.conv_1(x), self.conv_2(shifted)], dim=1))


def relu_conv_bn(C_in, C_out):
    """DARTS' preprocessing: ReLU, 1x1 convolution without bias, BN."""
    return nn.Sequential(nn.ReLU(inplace=False), nn.Conv2d(C_in, C_out, 1, stride=1, bias=False),
                         nn.BatchNorm2d(C_out))


class Cell(nn.Module):
    """A two-input cell with DARTS' preprocessing of its inputs to the cell's width."""

    def __init__(self, preprocess0, preprocess1, cell, reduction=False):
        super().__init__()
        self.preprocess0 = preprocess0
        self.preprocess1 = preprocess1
        self.cell = cell
        self.reduction = reduction

    def forward(self, s0, s1):
        return self.cell(self.preprocess0(s0), self.preprocess1(s1))


class DartsNetwork(nn.Module):
    """NADER's DARTS network: stem, cells (s0, s1 = s1, cell(s0, s1)), avg_pool, fc."""

    def __init__(self, stem, cells, in_features, num_classes):
        super().__init__()
        self.stem = stem
        self.cells = nn.ModuleList(cells)
        self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x):
        s0 = s1 = self.stem(x)
        for cell in self.cells:
            s0, s1 = s1, cell(s0, s1)
        return self.fc(torch.flatten(self.avg_pool(s1), 1))
