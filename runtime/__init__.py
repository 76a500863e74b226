"""The runtime: train and evaluate compiled networks here, in a process pool or on Ray.

    from nader.runtime import Job, evaluate, PoolExecutor
    from nader.compiler.network import BUILDER
    results = evaluate([Job(arch_text, dataset="cifar10", preset="nb201-12", seed=s, data_dir="data",
                            builder=BUILDER) for s in (777, 888, 999)], PoolExecutor(workers=2), run_dir="runs/x")

See docs/runtime.md. Names are imported lazily so that ``import nader.runtime`` stays cheap.
"""
from __future__ import annotations

from nader import lazy_exports

_EXPORTS = {
    "Job": "jobs", "Result": "jobs", "run_job": "jobs",
    "evaluate": "runner",
    "Executor": "executors", "InProcessExecutor": "executors", "PoolExecutor": "executors",
    "RayExecutor": "executors", "make_executor": "executors",
    "RunStore": "store",
    "Trainer": "trainer",
    "Preset": "presets", "PRESETS": "presets", "get_preset": "presets",
    "load_dataset": "data", "DatasetBundle": "data", "DATASETS": "data",
    "DatasetError": "errors", "ConfigError": "errors",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
