"""Several trials per GPU: the choice of K and the device each pool worker gets, with the
memory figures injected (no GPU needed)."""
from __future__ import annotations

import pytest

from nader.runtime import gpu_slots as G
from nader.runtime.errors import ConfigError
from nader.runtime.executors import PoolExecutor, default_devices, make_executor

GIB = 1 << 30


def test_memory_bounds_k_after_the_running_trials():
    # 80 GiB device, 70 GiB free with one trial resident, 2 GiB a trial: (70 - 8) // 2 = 31 more
    assert G.choose_trials_per_device(70 * GIB, 80 * GIB, 2 * GIB, running=1) == 32
    # measured before any trial runs: no "+1"
    assert G.choose_trials_per_device(70 * GIB, 80 * GIB, 2 * GIB) == 31


def test_cpu_cores_and_cap_bound_k():
    assert G.choose_trials_per_device(70 * GIB, 80 * GIB, 2 * GIB, running=1, cpus=16) == 16
    assert G.choose_trials_per_device(70 * GIB, 80 * GIB, 2 * GIB, running=1, cpus=16, cap=6) == 6


def test_a_full_device_still_runs_what_it_runs():
    # 3 GiB free on 16 GiB: the headroom (1.6 GiB) leaves 1.4 GiB, less than a trial
    assert G.choose_trials_per_device(3 * GIB, 16 * GIB, 2 * GIB, running=1) == 1
    assert G.choose_trials_per_device(0, 16 * GIB, 2 * GIB, running=3) == 3
    assert G.choose_trials_per_device(0, 16 * GIB, 2 * GIB) == 1
    with pytest.raises(ValueError):
        G.choose_trials_per_device(GIB, GIB, 0)


def test_footprint_adds_safety_and_the_cuda_context():
    assert G.trial_footprint(GIB) == int(1.25 * GIB) + G.CUDA_CONTEXT_BYTES
    ev = {"type": "epoch", "cuda_free_bytes": 5, "cuda_total_bytes": 10, "cuda_peak_bytes": 2}
    assert G.MemoryReport.from_event(ev) == G.MemoryReport(free=5, total=10, peak=2)
    assert G.MemoryReport.from_event({"type": "epoch", "train_loss": 1.0}) is None  # a CPU epoch


def test_devices_take_turns():
    assert G.interleave({"cuda:0": 2, "cuda:1": 3}) == ["cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:1"]
    assert G.interleave({"cuda:0": 0}) == []


def test_fixed_k_is_used_at_once_and_capped_by_workers():
    slots = G.DeviceSlots(["cuda:0", "cuda:1"], fixed=3, cpus=16)
    assert slots.initial() == ["cuda:0", "cuda:1"] * 3
    capped = G.DeviceSlots(["cuda:0", "cuda:1"], fixed=3, cpus=16, max_workers=5)
    assert capped.initial() == ["cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0"]
    # a fixed K ignores memory reports
    assert slots.observe("cuda:0", G.MemoryReport(70 * GIB, 80 * GIB, GIB), running=3) == 0


def test_automatic_k_starts_with_one_and_grows_once_on_the_first_report():
    slots = G.DeviceSlots(["cuda:0", "cuda:1"], cpus=16)  # 8 cores per GPU
    assert slots.initial() == ["cuda:0", "cuda:1"]
    small = G.MemoryReport(free=78 * GIB, total=80 * GIB, peak=GIB // 2)
    assert slots.observe("cuda:0", small, running=1) == 7  # bounded by the 8 cores per GPU
    assert slots.target == {"cuda:0": 8, "cuda:1": 1}
    assert slots.observe("cuda:0", small, running=8) == 0  # decided once
    big = G.MemoryReport(free=30 * GIB, total=80 * GIB, peak=9 * GIB)  # 9*1.25+0.5 = 11.75 GiB a trial
    assert slots.observe("cuda:1", big, running=1) == 1  # (30 - 8) // 11.75 = 1 more
    assert slots.footprint["cuda:1"] == int(9 * GIB * 1.25) + G.CUDA_CONTEXT_BYTES
    assert slots.observe("cpu", small, running=1) == 0


def test_automatic_k_respects_the_workers_cap():
    slots = G.DeviceSlots(["cuda:0", "cuda:1"], cpus=16, max_workers=4)
    report = G.MemoryReport(free=78 * GIB, total=80 * GIB, peak=GIB // 2)
    assert slots.observe("cuda:0", report, running=1) == 2  # 4 in all, one kept for cuda:1
    assert slots.observe("cuda:1", report, running=1) == 0


def test_pool_plans_workers_per_gpu_without_starting_any():
    ex = PoolExecutor(devices=["cuda:0", "cuda:1"], trials_per_device=2, cpus=16)
    assert ex.devices == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"] and ex.threads == 1
    auto = PoolExecutor(devices=["cuda:0"], cpus=16)
    assert auto.devices == ["cuda:0"] and auto.slots.fixed is None
    one = make_executor("pool", device="cuda", trials_per_gpu=3)
    assert one.devices == ["cuda:0"] * 3
    with pytest.raises(ConfigError):
        PoolExecutor(devices=["cuda:0"], trials_per_device=0)


def test_cpu_pool_keeps_its_behaviour():
    assert default_devices(3, n_gpu=0) == ["cpu"] * 3
    assert default_devices(None, n_gpu=2) == ["cuda:0", "cuda:1"]
    ex = PoolExecutor(devices=["cpu"] * 2, trials_per_device=4, cpus=8)
    assert ex.devices == ["cpu", "cpu"] and ex.threads == 4 and ex.slots is None
