"""The weights a Python objective hands over: `arch.save_weights(net)` inside the objective.

The runtime's own trainings leave a checkpoint per seed (`RUN/checkpoints/JOB.pt`). An objective
trains with its own code, so it saves what it trained itself, one file per architecture and seed,
`RUN/checkpoints/arch-ID-seed-S.pt`: a dict ``{"format", "model": state_dict, "arch_id", "seed",
"preprocessing"}`` (tensors on the CPU). It is written whole or not at all (`write_file`), from the
thread or process that runs the objective (no row of the store: the driver stays its one writer),
in the folder no command's output may replace (`nader.runtime.outputs`). `nader-search best --emit
... --weights` and `Study.export(..., weights=True)` take it as they take a training's checkpoint.
"""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Optional, Sequence

from nader.inputs.writes import write_file
from nader.runtime.outputs import CHECKPOINTS

FORMAT = "nader-objective-weights/1"


def weights_path(run_dir, arch_id: int, seed: int) -> Path:
    return Path(run_dir) / CHECKPOINTS / f"arch-{int(arch_id)}-seed-{int(seed)}.pt"


def _channels(values, name: str) -> Optional[list]:
    if values is None:
        return None
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"save_weights: {name} is one number per input channel, not {values!r:.60}") from None
    if not out or not all(math.isfinite(v) for v in out) or (name == "std" and min(out) <= 0):
        raise ValueError(f"save_weights: {name} must be finite numbers{' above 0' if name == 'std' else ''}, "
                         f"one per input channel; got {values!r:.60}")
    return out


def save_weights(run_dir, arch_id: int, seed: int, module, *, mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> Path:
    """Save `module`'s weights (an nn.Module or its state_dict) as the trained weights of
    architecture `arch_id`'s evaluation with `seed`; `mean` and `std` (per input channel) record the
    normalisation the objective fed the network, which the export states. The path written."""
    import torch

    state = module.state_dict() if hasattr(module, "state_dict") else module
    if not isinstance(state, dict) or not all(isinstance(k, str) and torch.is_tensor(v) for k, v in state.items()):
        raise ValueError("save_weights takes the network (an nn.Module) or its state_dict")
    mean, std = _channels(mean, "mean"), _channels(std, "std")
    if (mean is None) != (std is None) or (mean is not None and len(mean) != len(std)):
        raise ValueError("save_weights: give mean and std together, one number per input channel each")
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, "model": {k: v.detach().cpu() for k, v in state.items()}, "arch_id": int(arch_id),
                "seed": int(seed), "preprocessing": {"mean": mean, "std": std} if mean is not None else None}, buffer)
    path = weights_path(run_dir, arch_id, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_file(path, buffer.getvalue(), what="weights")


def load_weights(path) -> Optional[dict]:
    """The saved weights at `path` (``model`` and ``preprocessing``), or None when absent or unreadable."""
    import torch

    path = Path(path)
    if not path.is_file():
        return None
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - any damage reads as "no weights", which the export names
        return None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT or not isinstance(saved.get("model"), dict):
        return None
    return saved


__all__ = ["FORMAT", "load_weights", "save_weights", "weights_path"]
