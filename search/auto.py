"""`--strategy auto` (the default): the recipe the benchmarks show best, chosen from the space, the
budget and the data at hand, and said in one line (`SearchConfig.chosen`) when the run starts.

* **The cell space** (`--space nb201`): the predictor (`strategies/predictor.py`, its defaults)
  after a zero-cost warm start of the whole space by synflow (6,334 networks, about 100 s the
  first time on a 2-core machine, 0 once cached). On both development tables it evaluated the
  best-validation cell within 10 queries in every seed; on ImageNet16-120 no other strategy from
  the same warm start did before 300 (benchmarks/README.md, `strategies.py --dev`). The budget:
  with a wall-clock `--time-limit` under `SHORT_LIMIT` the warm start scores 1,000 cells instead
  (about 13 s). The data: synflow needs no images, so a table alone is enough; a proxy reading images
  (`--proxy naswot`, with `--data-dir`) is the user's choice, not made here, because no image
  data set was at hand to benchmark it. Settings given explicitly win: `--warm-start 0` (no warm
  start), `--proxy`, `--option`.
* **The block language**: `rea`, the default before `auto`, unchanged and so not announced:
  nothing benchmarked there yet beats it (on digits synflow's rank correlation with accuracy is
  +0.04; benchmarks/README.md, prescreen_bench.py), so no proxy is added.
* Without scikit-learn (the `[data]` extra) the cell space gets `local` search from the same warm
  start, which found both development tables' best cells by 300 queries in 10 of 10 seeds.

The choice is a function of the settings, so a resumed run makes the same one; the run records
the strategy chosen, not `auto`.
"""
from __future__ import annotations

import importlib.util
from typing import Optional

from .spaces.space import SPACES
from .strategies.catalog import AUTO_SUMMARY as SUMMARY

AUTO = "auto"
SHORT_LIMIT = 1800.0  # seconds: under this wall-clock limit the whole-space warm start (~100 s) is too dear
SUBSET = 1000  # cells the warm start scores under a short time limit


def resolve_auto(config) -> Optional[str]:
    """Replace `auto` in `config` by what it stands for (strategy, warm start); the line to print, or None."""
    if config.strategy != AUTO:
        return None
    space = SPACES.get(config.space)
    if space is None or not space.uniform:
        config.strategy = "rea"  # the default before auto, unchanged: said on every run it would only be noise
        return None
    config.strategy = "predictor" if importlib.util.find_spec("sklearn") is not None else "local"
    if config.warm_start is None:
        short = isinstance(config.time_limit, (int, float)) and config.time_limit < SHORT_LIMIT
        config.warm_start = SUBSET if short else "all"
    warm = ("no warm start" if not config.warm_start else
            f"a warm start of {'the whole space' if config.warm_start == 'all' else f'{config.warm_start:,} cells'} "
            f"by {config.proxy}")
    why = ("it found the development tables' best cells within 10 queries" if config.strategy == "predictor" else
           "scikit-learn is not installed (pip install 'nader-toolchain[data]' for the predictor)")
    return f"auto: {config.strategy} with {warm} ({why}; benchmarks/README.md)"


__all__ = ["AUTO", "SUMMARY", "resolve_auto"]
