"""Several objectives: what a search optimises, how a node is ranked, and the Pareto set.

A search has one objective by default, the validation accuracy (maximised). ``--objective
valid_acc:max,params:min`` (``objective`` in SEARCH.toml, ``directions`` in the Python API) names
several, each ``NAME:max`` or ``NAME:min``:

| name | what | from |
|---|---|---|
| `valid_acc` | validation accuracy, percent (mean over the ok seeds) | the evaluator |
| `params` | parameters of the fitted network | the checks (the compiler's count) |
| `flops` | FLOPs of the fitted network | the checks |
| `latency` | milliseconds per batch-1 forward pass, measured after training on the device that trained it | the runtime |

A user objective of the Python API may return values under any other name; they are stored the
same way. With several objectives, strategies rank by non-dominated sorting (pymoo's
`NonDominatedSorting`, front 0 is the Pareto set); the budget stays a constraint (the checks
refuse what does not fit) and never an objective of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from nader.runtime.errors import ConfigError

KNOWN = {"valid_acc": "max", "params": "min", "flops": "min", "latency": "min"}  # name -> usual direction
DIRECTIONS = {"max": "max", "maximize": "max", "min": "min", "minimize": "min"}
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True)
class Objective:
    name: str
    direction: str  # max | min

    def __str__(self) -> str:
        return f"{self.name}:{self.direction}"

    def loss(self, value: float) -> float:
        """The value as pymoo minimises it."""
        return -float(value) if self.direction == "max" else float(value)


DEFAULT = (Objective("valid_acc", "max"),)


def parse_objectives(value) -> Tuple[Objective, ...]:
    """``"valid_acc:max,params:min"`` or a list of such strings -> Objectives. A name without a
    direction takes its usual one (known names only)."""
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    out: List[Objective] = []
    for part in parts:
        text = str(part).strip().lower()
        if not text:
            continue
        name, sep, direction = text.partition(":")
        name = name.strip()
        if not name or not set(name) <= NAME_CHARS:
            raise ConfigError(f"objective: expected NAME:max or NAME:min (letters, digits, _), not {part!r}")
        if not sep:
            if name not in KNOWN:
                raise ConfigError(f"objective {name}: give its direction ({name}:max or {name}:min)")
            direction = KNOWN[name]
        if direction.strip() not in DIRECTIONS:
            raise ConfigError(f"objective {name}: the direction is max or min, not {direction!r}")
        out.append(Objective(name, DIRECTIONS[direction.strip()]))
    if not out:
        raise ConfigError("objective: name at least one, e.g. valid_acc:max,params:min")
    names = [o.name for o in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"objective: {', '.join(sorted({n for n in names if names.count(n) > 1}))} named twice")
    return tuple(out)


def of_config(spec: Optional[Sequence[str]]) -> Tuple[Objective, ...]:
    return parse_objectives(spec) if spec else DEFAULT


def check_known(objectives: Sequence[Objective]) -> None:
    """For the CLI, where the evaluator produces the values: only the known names exist."""
    unknown = [o.name for o in objectives if o.name not in KNOWN]
    if unknown:
        raise ConfigError(f"unknown objective {', '.join(unknown)}; choose among {', '.join(KNOWN)} (a Python "
                          f"objective function may return others: see the Python API)")


def require_pymoo(objectives: Sequence[Objective]) -> None:
    """Several objectives rank by pymoo's non-dominated sorting: refuse up front without it."""
    if len(objectives) < 2:
        return
    try:
        import pymoo  # noqa: F401
    except ImportError:
        raise ConfigError("several objectives need pymoo for non-dominated sorting: "
                          "pip install 'nader-toolchain[pareto]'") from None


def value(node, name: str) -> Optional[float]:
    """One objective's value on a TreeNode or a record dict (None when it has none)."""
    get = node.get if isinstance(node, dict) else lambda k: getattr(node, k, None)
    reported = get("objectives") or {}
    if name == "valid_acc" or (name in ("params", "flops") and name not in reported):
        v = get(name)  # its column; a Python objective's own params or flops win over the compiler's
    else:
        v = reported.get(name)
    return None if v is None else float(v)


def vector(node, objectives: Sequence[Objective]) -> Optional[List[float]]:
    """The losses pymoo minimises, or None when a value is missing or the node did not train."""
    status = node.get("status") if isinstance(node, dict) else node.status
    if status != "ok":
        return None
    out = []
    for o in objectives:
        v = value(node, o.name)
        if v is None:
            return None
        out.append(o.loss(v))
    return out


def fronts(points: Sequence[Sequence[float]]) -> List[List[int]]:
    """Non-dominated fronts (indices into `points`, front 0 first): pymoo's sorting."""
    if not points:
        return []
    if len(points[0]) == 1:  # one objective: equal values share a front (no pymoo needed)
        levels = sorted({p[0] for p in points})
        return [[i for i, p in enumerate(points) if p[0] == level] for level in levels]
    import numpy as np

    try:
        from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting
    except ImportError:
        raise ConfigError("several objectives need pymoo for non-dominated sorting: "
                          "pip install 'nader-toolchain[pareto]'") from None
    found = NonDominatedSorting().do(np.asarray(points, dtype=float))
    return [sorted(int(i) for i in front) for front in found]


def ranks(nodes: Sequence, objectives: Sequence[Objective]) -> dict:
    """arch_id -> non-domination rank (0: Pareto set) of every node with all its values."""
    ranked = [(n, vector(n, objectives)) for n in nodes]
    ranked = [(n, v) for n, v in ranked if v is not None]
    out = {}
    for r, front in enumerate(fronts([v for _, v in ranked])):
        for i in front:
            n = ranked[i][0]
            out[n["arch_id"] if isinstance(n, dict) else n.arch_id] = r
    return out


def best_of(nodes: Iterable, objectives: Sequence[Objective]):
    """The node a single-winner choice takes: lowest rank, then the first objective, then the
    earliest; None when no node has its values."""
    nodes = list(nodes)
    if len(objectives) < 2:
        o = objectives[0] if objectives else DEFAULT[0]
        scored = [(vector(n, (o,)), n) for n in nodes]
        scored = [(v, n) for v, n in scored if v is not None]
        return min(scored, key=lambda p: (p[0][0], p[1].arch_id), default=(None, None))[1]
    rank = ranks(nodes, objectives)
    kept = [n for n in nodes if n.arch_id in rank]
    return min(kept, key=lambda n: (rank[n.arch_id], vector(n, objectives)[0], n.arch_id), default=None)


def dominates(a, b, objectives: Sequence[Objective]) -> bool:
    """Whether node `a` is at least as good as `b` in every objective and better in one."""
    va, vb = vector(a, objectives), vector(b, objectives)
    if va is None:
        return False
    if vb is None:
        return True
    return all(x <= y for x, y in zip(va, vb)) and any(x < y for x, y in zip(va, vb))


def pareto_set(records: Sequence[dict], objectives: Sequence[Objective]) -> List[dict]:
    """The non-dominated records (front 0), in the order of the first objective."""
    rank = ranks(records, objectives)
    front = [r for r in records if rank.get(r["arch_id"]) == 0]
    return sorted(front, key=lambda r: (vector(r, objectives)[0], r["arch_id"]))
