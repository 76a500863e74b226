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


@pytest.fixture(scope="module")
def gt():
    spec = importlib.util.spec_from_file_location("gpu_trials", BENCH.parent / "gpu_trials.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_trial_projection_from_measured_epochs(gt):
    from nader.runtime.jobs import Result

    r = Result(job_id="x", seed=1, status="ok", seconds=12.0,
               history=[{"seconds": 5.0}, {"seconds": 2.0}, {"seconds": 3.0}])
    # set-up 2 + first epoch 5 + 11 steady epochs of 2 + evaluation 1 (last epoch less a steady one)
    assert gt._project(r, 12) == pytest.approx(30.0)
    assert gt._project(r, 200) == pytest.approx(2 + 5 + 199 * 2 + 1)
    assert gt._project(Result(job_id="x", seed=1, status="failed", history=[]), 12) is None


def test_trials_report_runs_the_pool_on_the_cpu(gt, tb):
    """The trials-per-GPU-hour machinery end to end on the CPU, one pool run (K = 1; several
    workers per pool are the executor tests' business). Figures are not asserted: only that the
    trial ran through the pool and the projections are built from its epochs."""
    rep = gt.trials_report("cpu", tb.RESNET_NAD, dataset="cifar10", synthetic_per_batch=4, epochs=2,
                           widths=(8, 16, 32), depths=(1, 1, 1), k=1, extra_options={"threads": 1})
    assert rep["k"] == 1 and rep["k_source"] == "given" and rep["peak_bytes"] is None  # no CUDA report
    assert rep["trial_12_s_k1"] > 11 * rep["steady_epoch_s_k1"] > 0
    assert rep["protocol_200_s"] > rep["trial_12_s_k1"]
    assert rep["trials_per_hour_k1"] == pytest.approx(3600 / rep["trial_12_s_k1"])
