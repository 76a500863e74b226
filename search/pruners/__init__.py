"""Pruners, one per file, behind the small interface of `base.py` (after Optuna's `pruners/`):
`successive-halving`, `hyperband` and `median`. The runtime's `--fidelity` rungs and an
objective's `arch.report` / `arch.should_prune` both decide through them (docs/api.md, "Pruning").
"""
from __future__ import annotations

from typing import Optional, Union

from nader.runtime.errors import ConfigError

from .base import Pruner, kept, promoted
from .hyperband import HyperbandPruner
from .median import MedianPruner
from .reports import Reports
from .successive_halving import SuccessiveHalvingPruner, ladder

#: the pruners by name (`create_study(pruner=NAME)`)
PRUNERS = {cls.name: cls for cls in (SuccessiveHalvingPruner, HyperbandPruner, MedianPruner)}


def make_pruner(spec: Union[str, dict, Pruner, None], *, eta: Optional[int] = None, min_resource: Optional[int] = None,
                max_resource: Optional[int] = None) -> Optional[Pruner]:
    """A pruner from its name, its stored spec ({"name": ..., parameters}) or itself; a name
    alone takes the study's `eta`, `min_epochs` and `epochs` where the rule has them. ConfigError
    for an unknown name or parameter."""
    if spec is None or isinstance(spec, Pruner):
        return spec
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ConfigError(f"pruner: expected one of {', '.join(PRUNERS)} or a Pruner, not {spec!r:.60}")
    cls = PRUNERS.get(spec["name"])
    if cls is None:
        raise ConfigError(f"pruner: unknown rule {spec['name']!r:.40}; choose one of {', '.join(PRUNERS)}")
    params = {k: v for k, v in spec.items() if k != "name" and v is not None}
    if cls is not MedianPruner:
        for key, value in (("reduction_factor", eta), ("min_resource", min_resource), ("max_resource", max_resource)):
            if value is not None:
                params.setdefault(key, value)
    try:
        return cls(**params)
    except TypeError as exc:
        raise ConfigError(f"pruner {spec['name']}: {exc}") from None


__all__ = ["HyperbandPruner", "MedianPruner", "PRUNERS", "Pruner", "Reports", "SuccessiveHalvingPruner", "kept",
           "ladder", "make_pruner", "promoted"]
