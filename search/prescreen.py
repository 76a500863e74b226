"""Training-free prescreening: rank candidates by a zero-cost proxy computed on the compiled module.

With ``--prescreen K`` each round of the search makes K valid candidates from the same parent,
scores each without training, trains the best and records the others as ``screened-out``.
NADER lists zero-shot quality estimation as future work; these are the two standard proxies:

``naswot``  Mellor et al. 2021, "Neural Architecture Search without Training". For a mini-batch
            of N training images, every hidden-unit activation (ReLU, GELU: the registry's
            ``Group.HIDDEN_ACTIVATION``) gives each image a binary code (active or not). With
            ``K[i, j]`` the number of units on which images i and j agree (N_A minus their
            Hamming distance), the score is ``log |det K|``: networks that tell
            the images of a batch apart at initialisation score high. A network with no such
            unit uses its classifier's input features as the code.
``synflow`` Tanaka et al. 2020, "Pruning neural networks without any data by iteratively
            conserving synaptic flow", as a NAS proxy (Abdelfattah et al. 2021): in float64 and
            eval mode (batch norm with its initial statistics, an identity), replace every
            parameter by its absolute value, feed an all-ones input, and sum
            ``|θ · ∂R/∂θ|`` over parameters, with R the sum of the outputs.

Both build the network exactly as training will (`build_network` with the fitted widths) from
the same seed, on the CPU.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

from nader.compiler.network import build_network
from nader.dsl.ops import Group, in_order

BATCH = 64  # NASWOT's mini-batch


def unit_types() -> tuple[type, ...]:
    """The torch module classes NASWOT reads codes from: those the hidden-unit activations lower to."""
    from nader.compiler.backends.torch_backend import LOWERINGS

    types = []
    for op in in_order(Group.HIDDEN_ACTIVATION):
        if op not in LOWERINGS:
            raise KeyError(f"{op.value} has no PyTorch lowering, so NASWOT cannot find its units")
        make = LOWERINGS[op](None).make  # an activation's lowering needs no context
        if not isinstance(make, type):
            raise TypeError(f"{op.value} lowers to {make!r}, not a module class NASWOT can find in a network")
        types.append(make)
    return tuple(types)


def _build(text: str, skeleton: str, dataset: str, widths, depths, seed: int):
    import torch

    torch.manual_seed(seed)
    model, _info = build_network(text, skeleton, dataset, widths=widths, depths=depths)
    return model


def naswot(model, images) -> float:
    """log|det K| of the binary activation-code kernel over a batch (float64)."""
    import torch
    from torch import nn

    codes = []
    units = [m for m in model.modules() if isinstance(m, unit_types())]
    if not units:
        units = [m for m in model.modules() if isinstance(m, nn.Linear)][-1:]

    def hook(module, inputs, output):
        codes.append((inputs[0].detach().reshape(inputs[0].shape[0], -1) > 0).to(torch.float64))

    handles = [m.register_forward_hook(hook) for m in units]
    try:
        model.eval()
        with torch.no_grad():
            model(images)
    finally:
        for h in handles:
            h.remove()
    n = images.shape[0]
    kernel = torch.zeros(n, n, dtype=torch.float64)
    for c in codes:
        kernel += c @ c.T + (1.0 - c) @ (1.0 - c).T
    sign, logdet = torch.linalg.slogdet(kernel)
    return float(logdet) if float(sign) != 0.0 else float("-inf")


def synflow(model, input_shape) -> float:
    """Sum over parameters of |θ · ∂R/∂θ| with |θ|, an all-ones input and float64."""
    import torch

    model = model.double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.abs_()
    model.zero_grad(set_to_none=True)
    out = model(torch.ones((1, *input_shape), dtype=torch.float64))
    out.sum().backward()
    total = 0.0
    for p in model.parameters():
        if p.grad is not None:
            total += float((p.detach() * p.grad).abs().sum())
    return total


PROXIES: Dict[str, Callable] = {"naswot": naswot, "synflow": synflow}


class Prescreener:
    """Scores architectures for one search (dataset, skeleton and depths fixed)."""

    def __init__(self, proxy: str, *, skeleton: str, dataset: str, depths=None, data_dir: Optional[str] = None,
                 seed: int = 0):
        if proxy not in PROXIES:
            raise ValueError(f"unknown proxy {proxy!r}; choose one of: {', '.join(PROXIES)}")
        self.proxy, self.skeleton, self.dataset, self.depths, self.seed = proxy, skeleton, dataset, depths, seed
        self.data_dir = data_dir
        self._batch = None

    def batch(self):
        """A fixed mini-batch of normalised training images (the same for every candidate)."""
        if self._batch is None:
            import torch

            from nader.runtime.data import load_dataset
            from nader.runtime.pipeline import Normalizer

            data = load_dataset(self.dataset, self.data_dir)
            g = torch.Generator().manual_seed(self.seed)
            idx = torch.randperm(len(data.train), generator=g)[:BATCH]
            self._batch = Normalizer(data.mean, data.std, "cpu")(data.train.images[idx])
        return self._batch

    def score(self, text: str, widths) -> float:
        import torch

        with torch.random.fork_rng(devices=[]):
            model = _build(text, self.skeleton, self.dataset, widths, self.depths, self.seed)
            if self.proxy == "naswot":
                return naswot(model, self.batch())
            return synflow(model, tuple(self.batch().shape[1:]))
