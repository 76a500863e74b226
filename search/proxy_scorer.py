"""Scoring architectures with the proxies: built by the compiler at fixed small settings, seeded
from each architecture's canonical hash, timed, and cached by hash so no score is computed twice.

Every proxy reads the network `nader.compiler.network.build_network` builds (or, for the counting
proxies, the figures `analyze` gives without building) for the search's skeleton and dataset at
the fixed small settings of `ProxySettings`: base width 8 and one block (cell) per stage, so a
score costs milliseconds, whatever the width the budget would fit. Each architecture's network
is initialised from its own seed, the first 32 bits of its canonical hash, so its score does not
depend on the run, the order or the other architectures: it can be cached by hash and shared
between runs. A proxy's score is stored under a *setting* key naming its version, the skeleton,
the dataset and these settings; a cached score of any other setting is not read.

The caches (`nader.search.store.ProxyCache`) are the run's database first, then a shared file
(``--proxy-cache``): a score found in the shared file is copied into the run's, a new one is
written to both. `ProxyScorer.evaluated` and `.seconds` count what this scorer computed; scores
read from a cache cost nothing and are counted in `.reused`.
"""
from __future__ import annotations

import contextlib
import copy
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from nader.compiler.datasets import dataset_info
from nader.compiler.network import analyze, build_network
from nader.compiler.skeletons import skeleton_info

from .proxies import members, order, proxy_modules
from .proxies.proxy import Inputs, finite


@dataclass(frozen=True)
class ProxySettings:
    """The fixed network and batch every proxy is computed at (part of every cached score's key)."""

    width: int = 8  # base width: stage widths follow the skeleton's multipliers (nb201: 8, 16, 32)
    depth: int = 1  # blocks (cells) per stage
    batch: int = 16  # images, or Gaussian inputs, per batch
    resolution: int = 16  # input size, at most the dataset's (images are scaled down to it by area)
    data_seed: int = 0  # which training images make the fixed batch

    def key(self, version: int, skeleton: str, dataset: str) -> str:
        return (f"v{version}/{skeleton}/{dataset}/w{self.width}/d{self.depth}/r{self.resolution}/b{self.batch}"
                f"/s{self.data_seed}")

    def input_size(self, dataset: str) -> int:
        return min(self.resolution, dataset_info(dataset).input_size)


SETTINGS = ProxySettings()


def seed_of(arch_hash: Optional[str]) -> int:
    """An architecture's own seed: the first 32 bits of its canonical hash (hex)."""
    try:
        return int(str(arch_hash)[:8], 16)
    except ValueError:
        return 0


class ProxyScorer:
    """Scores architectures (canonical hash, text) by one proxy or an ensemble, for one skeleton
    and dataset. ``data_dir``: where the images of proxies that need them are (`load_dataset`)."""

    def __init__(self, spec: str, *, skeleton: str, dataset: str, data_dir: Optional[str] = None, caches=(),
                 settings: ProxySettings = SETTINGS, images=None):
        """`images`: (name, images, labels), a batch of the caller's own in place of the dataset's (the
        proxies benchmark's Gaussian stand-in where no images are at hand); its name is in the
        setting key, so its scores never mix with the dataset's."""
        self.spec, self.members = spec, members(spec)
        self.skeleton, self.dataset, self.data_dir, self.settings = skeleton, dataset, data_dir, settings
        self.network_dataset = dataset_info(dataset).name
        self.caches = list(caches)
        self.stages = len(skeleton_info(skeleton).multipliers)
        self.evaluated = 0  # (architecture, proxy) scores computed by this scorer
        self.seconds = 0.0  # their time
        self.reused = 0  # scores read from a cache
        self._batch = None if images is None else tuple(images[1:])
        self._batch_name = None if images is None else str(images[0])

    @property
    def is_ensemble(self) -> bool:
        return len(self.members) > 1

    def setting(self, name: str) -> str:
        key = self.settings.key(proxy_modules()[name].PROXY.version, self.skeleton, self.network_dataset)
        return f"{key}/{self._batch_name}" if self._batch_name and proxy_modules()[name].PROXY.data else key

    # ------------------------------------------------------------------ scores
    def scores(self, items: Sequence[Tuple[str, str]]) -> Dict[str, List[Optional[float]]]:
        """Each member's score of each (hash, text), in order (None: it failed); cached ones are
        read, the others computed once per hash and stored in every cache."""
        hashes = [h for h, _ in items]
        found: Dict[str, dict] = {name: self._cached(name, hashes) for name in self.members}
        texts = dict(reversed(items))  # the first text of each hash
        todo: Dict[str, List[str]] = {}
        for h in dict.fromkeys(hashes):
            missing = [name for name in self.members if h not in found[name]]
            if missing:
                todo[h] = missing
        self.reused += sum(len(found[name]) for name in self.members)
        if todo:
            rows = []
            with _one_thread():
                for h, names in todo.items():
                    for name, score, error, seconds in self._compute(h, texts[h], names):
                        found[name][h] = (score, error)
                        rows.append((h, name, self.setting(name), score, error, seconds))
                        self.evaluated += 1
                        self.seconds += seconds
            for cache in self.caches:
                cache.put(rows)
        return {name: [found[name][h][0] for h in hashes] for name in self.members}

    def order(self, items: Sequence[Tuple[str, str]]) -> Tuple[List[int], Dict[str, List[Optional[float]]]]:
        """(indices best first, each member's scores): by the score, or an ensemble's mean rank."""
        scores = self.scores(items)
        return order(scores), scores

    def _cached(self, name: str, hashes: List[str]) -> dict:
        setting = self.setting(name)
        have: dict = {}
        for i, cache in enumerate(self.caches):
            missing = [h for h in dict.fromkeys(hashes) if h not in have]
            if not missing:
                break
            got = cache.get(missing, name, setting)
            if got and i > 0:  # from a shared file: the run's own store keeps a copy
                for earlier in self.caches[:i]:
                    earlier.put([(h, name, setting, s, e, 0.0) for h, (s, e) in got.items()], source="copied")
            have.update(got)
        return have

    def _compute(self, arch_hash: str, text: str, names: List[str]) -> List[tuple]:
        """(name, score, error, seconds) of each proxy in `names` for one architecture; the network is
        built once (its build time shared by the proxies that read it) and copied for each."""
        import torch

        seed = seed_of(arch_hash)
        modules = [proxy_modules()[n] for n in names]
        building = [m for m in modules if m.PROXY.builds]
        t0 = time.perf_counter()
        net = None
        try:
            with torch.random.fork_rng(devices=[]):
                torch.default_generator.manual_seed(seed)  # torch.manual_seed also seeds every accelerator: 1 ms
                shape = dict(widths=[self.settings.width], depths=[self.settings.depth] * self.stages,
                             input_size=self.settings.input_size(self.network_dataset))
                if building:
                    net, info = build_network(text, self.skeleton, self.network_dataset, **shape)
                else:
                    info = analyze(text, self.skeleton, self.network_dataset, **shape)
        except Exception as exc:  # noqa: BLE001 - an architecture the proxy network cannot take has no score
            seconds = (time.perf_counter() - t0) / len(modules)
            return [(n, None, f"{type(exc).__name__}: {str(exc)[:300]}", seconds) for n in names]
        shared = (time.perf_counter() - t0) / max(1, len(building) if building else len(modules))
        inputs = self._inputs(seed, info, any(m.PROXY.data for m in modules))
        copies = [copy.deepcopy(net) for _ in building[1:]] + [net] if building else []
        out = []
        for module in modules:
            t = time.perf_counter()
            target = copies.pop(0) if module.PROXY.builds else None
            try:
                with torch.random.fork_rng(devices=[]):
                    torch.default_generator.manual_seed(seed)
                    score, error = finite(module.score_network(target, inputs)), None
                if score is None:
                    error = "the score is not a number (NaN)"
            except Exception as exc:  # noqa: BLE001 - a proxy that fails on a network gives no score
                score, error = None, f"{type(exc).__name__}: {str(exc)[:300]}"
            seconds = time.perf_counter() - t + (shared if module.PROXY.builds or not building else 0.0)
            out.append((module.PROXY.name, score, error, seconds))
        return out

    def _inputs(self, seed: int, info: dict, data: bool) -> Inputs:
        size = int(info.get("input_size") or dataset_info(self.network_dataset).input_size)
        inputs = Inputs(shape=(3, size, size), classes=int(info.get("num_classes") or 0), seed=seed,
                        batch=self.settings.batch, counts={"params": info.get("params"), "flops": info.get("flops")})
        if data:
            inputs.images, inputs.labels = self.batch()
        return inputs

    def batch(self):
        """The fixed mini-batch of normalised training images and their labels (the same for every
        architecture, from `settings.data_seed`)."""
        if self._batch is None:
            import torch

            from nader.runtime.data import load_dataset
            from nader.runtime.pipeline import Normalizer

            from torch.nn import functional as F

            data = load_dataset(self.network_dataset, self.data_dir)
            g = torch.Generator().manual_seed(self.settings.data_seed)
            idx = torch.randperm(len(data.train), generator=g)[:self.settings.batch]
            images = Normalizer(data.mean, data.std, "cpu")(data.train.images[idx])
            size = self.settings.input_size(self.network_dataset)
            if images.shape[-1] != size:
                images = F.interpolate(images, size=(size, size), mode="area")
            self._batch = (images, data.train.labels[idx])
        return self._batch


@contextlib.contextmanager
def _one_thread():
    """Score on one torch thread: the networks are tiny, and a second thread costs more than it gives."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


__all__ = ["ProxyScorer", "ProxySettings", "SETTINGS", "seed_of"]
