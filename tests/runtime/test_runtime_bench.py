"""The training benchmark's baseline is the same network as the block text the runtime trains."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "train_bench.py"


@pytest.fixture(scope="module")
def tb():
    spec = importlib.util.spec_from_file_location("train_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hand_written_network_matches_the_block_text(tb):
    hand = tb.NB201ResNet(8)
    x = torch.randn(2, 3, 32, 32)
    assert hand(x).shape == (2, 10)
    n_hand = sum(p.numel() for p in hand.parameters())
    try:
        from nader.compiler.network import build_network
    except ImportError:
        pytest.skip("nader.compiler.network not available")
    dsl, info = build_network(tb.RESNET_NAD, "nb201", "cifar10", widths=[8, 16, 32])
    assert info["params"] == n_hand == sum(p.numel() for p in dsl.parameters())
    assert dsl(x).shape == (2, 10)
    # the same layers in the same order: conv and BN parameter shapes agree one to one
    shapes = lambda m: sorted(tuple(p.shape) for p in m.parameters())  # noqa: E731
    assert shapes(dsl) == shapes(hand)


def test_per_sample_dataset(tb):
    imgs = np.random.default_rng(0).integers(0, 256, size=(4, 3, 32, 32), dtype=np.uint8)
    ds = tb.PerSampleCIFAR(imgs, np.arange(4))
    x, y = ds[2]
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32 and y == 2
