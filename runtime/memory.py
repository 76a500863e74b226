"""How much memory one training trial may plan on, from the device it trains on.

The search refuses a candidate whose analytic training memory (`nader.compiler.network_cost.
training_memory`) is over this budget before it trains, instead of letting it swap the machine
or die of an out-of-memory error hours in. The default is a share of the device:

* CPU: half the RAM this process may use (the machine's, or its cgroup's limit when
  lower). The rest is for the data, the framework itself, the operating system and the other
  processes of a search (a pool's other trials, the report).
* CUDA: nine tenths of the GPU's memory, split between the trials that share it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

CPU_SHARE = 0.5
GPU_SHARE = 0.9
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def physical_memory() -> int:
    """Bytes of RAM this process may use: the machine's, or its cgroup's limit when lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for name in _CGROUP_LIMITS:
        try:
            text = Path(name).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def _cuda_memory(spec: Optional[str]) -> Optional[int]:
    """The GPU's total memory when `spec` trains on CUDA, else None."""
    if spec not in (None, "", "auto") and not spec.startswith("cuda"):
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    index = int(spec.partition(":")[2] or 0) if spec and spec.startswith("cuda") else 0
    return int(torch.cuda.get_device_properties(index).total_memory)


def default_memory_budget(device: Optional[str] = None, trials_per_device: int = 1) -> tuple[int, str]:
    """(bytes, where the figure comes from) for one trial on `device` (None or "auto": CUDA when present)."""
    gpu = _cuda_memory(device)
    share = max(1, trials_per_device)
    if gpu is not None:
        return int(gpu * GPU_SHARE / share), f"{GPU_SHARE:.0%} of the GPU's {gpu / 2**30:.1f} GiB" + (
            f" over {share} trials" if share > 1 else "")
    ram = physical_memory()
    return int(ram * CPU_SHARE / share), f"{CPU_SHARE:.0%} of {ram / 2**30:.1f} GiB of RAM" + (
        f" over {share} trials" if share > 1 else "")
