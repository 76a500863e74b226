"""naswot: how differently the network's ReLUs split a batch of images at initialisation."""
from __future__ import annotations

from nader.dsl.ops import Group, in_order

from .proxy import Proxy

PROXY = Proxy("naswot", data=True,
              paper="Mellor et al. 2021, Neural Architecture Search without Training (ICML)",
              summary="log|det K| of the images' binary activation codes (K[i, j]: units where images i, j agree)",
              doc="""
    For the fixed mini-batch of training images, every hidden-unit activation (ReLU, GELU: the
    op registry's `Group.HIDDEN_ACTIVATION`) gives each image a binary code (active or not). With
    `K[i, j]` the number of units on which images i and j agree (N_A minus their Hamming
    distance), the score is `log |det K|` in float64: networks that tell the images of a batch
    apart at initialisation score high. A network with no such unit uses its classifier's input
    features as the code. The paper's method reads real images, so it needs `--data-dir`.""")


def unit_types() -> tuple:
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


def log_det_kernel(net, images) -> float:
    """log|det K| of the binary activation-code kernel of `images` (float64); -inf when singular."""
    import torch
    from torch import nn

    codes = []
    units = [m for m in net.modules() if isinstance(m, unit_types())]
    if not units:
        units = [m for m in net.modules() if isinstance(m, nn.Linear)][-1:]

    def hook(module, args, output):
        codes.append((args[0].detach().reshape(args[0].shape[0], -1) > 0).to(torch.float64))

    handles = [m.register_forward_hook(hook) for m in units]
    try:
        net.eval()
        with torch.no_grad():
            net(images)
    finally:
        for h in handles:
            h.remove()
    n = images.shape[0]
    kernel = torch.zeros(n, n, dtype=torch.float64)
    for c in codes:
        kernel += c @ c.T + (1.0 - c) @ (1.0 - c).T
    sign, logdet = torch.linalg.slogdet(kernel)
    return float(logdet) if float(sign) != 0.0 else float("-inf")


def score_network(net, inputs) -> float:
    return log_det_kernel(net, inputs.images)
