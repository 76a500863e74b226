"""Inference latency of a network on the device it runs on: the `latency` objective of a search.

Milliseconds per forward pass of one image (batch 1) in eval mode, the median of `repeats`
timed passes after `warmup` untimed ones, synchronised on CUDA. It is measured where the
network trained, so a search on a GPU ranks by GPU latency and one on a CPU by CPU latency; the
figure is a property of that machine, not of the architecture alone.
"""
from __future__ import annotations

import statistics
import time


def measure_latency(model, input_size: int, device=None, *, channels: int = 3, warmup: int = 3,
                    repeats: int = 10) -> float:
    """Median milliseconds of one batch-1 forward pass of `model` on `device`."""
    import torch

    device = torch.device(device or "cpu")
    was_training = model.training
    model.eval()
    x = torch.randn(1, channels, input_size, input_size, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times = []
    try:
        with torch.no_grad():
            for i in range(warmup + repeats):
                sync()
                t0 = time.perf_counter()
                model(x)
                sync()
                if i >= warmup:
                    times.append((time.perf_counter() - t0) * 1000.0)
    finally:
        model.train(was_training)
    return float(statistics.median(times))
