"""What a training-free proxy declares (`Proxy`) and what it is given (`Inputs`).

Apart from the proxies' package, so that a proxy module imports its declaration without
importing the package that discovers it (that would be an import circle), as the fix kinds do.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Proxy:
    """One zero-cost proxy: its stable name, what it needs, its paper and its documentation.

    ``builds``: the proxy reads a network built by the compiler (False: it reads the compiler's
    counts only, `analyze`, and no module is made). ``data``: it needs a mini-batch of real
    training images and labels; a proxy without it never asks for ``--data-dir`` (synflow feeds
    ones, zen-score Gaussian noise, as their papers do). ``version`` is part of every cached
    score's key: change it when the computation changes, so that older scores are not read.
    """

    name: str
    data: bool
    paper: str  # "Authors year, title (venue)"
    summary: str  # one line
    doc: str  # markdown: what is computed, and where we differ from the paper
    builds: bool = True
    version: int = 1
    labels: bool = False  # with `data`: the labels too (a loss)

    @property
    def needs(self) -> str:
        return ("images and labels" if self.labels else "images") if self.data else "no data"

    def explain(self) -> str:
        return (f"# {self.name} (needs {self.needs})\n\n{self.summary}\n\nPaper: {self.paper}\n\n"
                f"{textwrap.dedent(self.doc).strip()}\n")


@dataclass
class Inputs:
    """What a proxy's `score_network(net, inputs)` receives for one architecture.

    ``images``/``labels``: the fixed mini-batch of training images (normalised) and their
    labels, for proxies with ``data``; None otherwise. ``shape`` is one input's (C, H, W);
    ``seed`` the architecture's own seed (Gaussian inputs are drawn from it); ``counts`` the
    compiler's figures of the network (params, flops), for proxies that do not build.
    """

    shape: tuple
    classes: int
    seed: int
    batch: int
    images: Any = None
    labels: Any = None
    counts: dict = field(default_factory=dict)

    def generator(self):
        import torch

        return torch.Generator().manual_seed(self.seed)


def weighted_layers(net):
    """The convolutions and linear layers of a network: the layers whose weights the pruning-at-
    initialisation proxies (synflow, snip, grad_norm) sum over, as Abdelfattah et al. do."""
    from torch import nn

    return [m for m in net.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def finite(value: float) -> Optional[float]:
    """A score as stored: NaN becomes None (no score); infinities stay (they rank first or last)."""
    value = float(value)
    return None if value != value else value
