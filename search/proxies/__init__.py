"""Training-free (zero-cost) proxies: one module each, found by discovery, as the fix kinds are.

A module declares ``PROXY = Proxy(...)`` (its name, whether it needs data, its paper and its
documentation; `proxy.py`) and ``score_network(net, inputs) -> float``, higher meaning better. It imports
`Proxy` from `.proxy`, never from this package, which imports it. `search/proxy_scorer.py` builds each
architecture's network through the compiler at fixed small settings, seeds it from the
architecture's canonical hash, times it and caches the score in the store.

A proxy *spec* names one proxy (``synflow``) or an ensemble of several joined by ``+``
(``synflow+zen``), which ranks a pool of architectures by the mean of its members' ranks in that
pool, unweighted. `proxy_table()` is docs/search.md's table (`scripts/gen_docs.py`).
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType
from typing import Dict, List, Optional, Sequence, Tuple

from nader.runtime.errors import ConfigError

from .proxy import Inputs, Proxy

ENSEMBLE = "+"  # synflow+zen


@lru_cache(maxsize=1)
def proxy_modules() -> Dict[str, ModuleType]:
    """The proxy modules of this package by proxy name, in name order."""
    modules = [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)
               if not info.name.startswith("_") and info.name != "proxy"]
    out: Dict[str, ModuleType] = {}
    for module in sorted(modules, key=lambda m: m.PROXY.name):
        if module.PROXY.name in out:
            raise ValueError(f"proxy {module.PROXY.name} declared twice")
        out[module.PROXY.name] = module
    return out


def all_proxies() -> Dict[str, Proxy]:
    """Every proxy's declaration by name."""
    return {name: module.PROXY for name, module in proxy_modules().items()}


def module_of(name: str) -> ModuleType:
    return proxy_modules()[name]


def members(spec: str) -> Tuple[str, ...]:
    """The proxies a spec names (one, or an ensemble's members); ConfigError for an unknown one."""
    names = tuple(part.strip() for part in str(spec or "").split(ENSEMBLE))
    known = proxy_modules()
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown proxy {name!r} in {spec!r}; choose one of {', '.join(known)}, or several "
                              f"joined by {ENSEMBLE} (an ensemble: the mean of their ranks), e.g. synflow{ENSEMBLE}zen")
    if len(set(names)) != len(names):
        raise ConfigError(f"proxy {spec!r} names a member twice; an ensemble's members are unweighted")
    return names


def needs_data(spec: str) -> List[str]:
    """The members of a spec that need images (empty: it runs with no --data-dir)."""
    return [name for name in members(spec) if proxy_modules()[name].PROXY.data]


def data_free() -> List[str]:
    return [name for name, p in all_proxies().items() if not p.data]


# ---------------------------------------------------------------------- ranks


def score_ranks(scores: Sequence[Optional[float]]) -> List[float]:
    """Rank 1 for the highest score; ties share their mean rank; a missing score (None: a proxy
    that failed or gave NaN) ranks below every score, the missing ones tied."""
    order = sorted(range(len(scores)), key=lambda i: (scores[i] is None, -(scores[i] or 0.0)))
    out = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        key = scores[order[i]]
        while j + 1 < len(order) and scores[order[j + 1]] == key:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def mean_ranks(by_member: Dict[str, Sequence[Optional[float]]]) -> List[float]:
    """The ensemble's rank of each architecture of a pool: the mean of its members' ranks, unweighted."""
    columns = [score_ranks(scores) for scores in by_member.values()]
    return [sum(col[i] for col in columns) / len(columns) for i in range(len(columns[0]))] if columns else []


def order(by_member: Dict[str, Sequence[Optional[float]]]) -> List[int]:
    """A pool's indices best first: by the mean rank (a single proxy: its own rank), ties to the earlier."""
    mean = mean_ranks(by_member)
    return sorted(range(len(mean)), key=lambda i: (mean[i], i))


# ---------------------------------------------------------------------- what a run did


def session_line(stats: dict) -> str:
    """One line on what a session's proxy did (`Proxies.stats`): what it computed apart from the
    queries, and what it read from a cache."""
    computed, seconds = stats.get("computed", 0), stats.get("seconds", 0.0)
    each = f", {seconds / computed * 1000:.1f} ms each" if computed else ""
    pool = f"; warm start: {stats['pool']:,} architectures ranked" if stats.get("pool") else ""
    return (f"proxies: {stats.get('proxy')}: {computed:,} scores computed in {seconds:.1f} s{each}, "
            f"{stats.get('reused', 0):,} read from the cache{pool} (not queries)")


def stored_lines(rows: List[dict]) -> List[str]:
    """`nader-search status`'s lines on the proxy scores a run holds (`store.proxy_stats`)."""
    out = []
    for r in rows:
        each = f", {r['seconds'] / r['computed'] * 1000:.1f} ms each" if r["computed"] else ""
        failed = f", {r['failed']:,} without a score" if r["failed"] else ""
        out.append(f"proxies: {r['proxy']}: {r['scored']:,} architectures scored ({r['computed']:,} computed in "
                   f"{r['seconds']:.1f} s{each}, {r['copied']:,} copied from a shared cache{failed}; not queries)")
    return out


# ---------------------------------------------------------------------- documentation


def proxy_table() -> str:
    """docs/search.md's table of the proxies (generated by scripts/gen_docs.py)."""
    rows = ["| proxy | needs | what it computes | paper |", "|---|---|---|---|"]
    for name, p in all_proxies().items():
        cells = [f"`{name}`", p.needs, p.summary, p.paper]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


__all__ = ["ENSEMBLE", "Inputs", "Proxy", "all_proxies", "data_free", "mean_ranks", "members",
           "module_of", "needs_data", "order", "proxy_table", "proxy_modules", "score_ranks", "session_line", "stored_lines"]
