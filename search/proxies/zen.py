"""zen: the expressivity of the network's features for Gaussian inputs, scaled by its batch norms."""
from __future__ import annotations

from .proxy import Proxy

PROXY = Proxy("zen", data=False,
              paper="Lin et al. 2021, Zen-NAS: A Zero-Shot NAS for High-Performance Image Recognition (ICCV)",
              summary="log E|f(x) - f(x + γε)| + Σ log √(mean running variance) over batch norms; Gaussian x, ε",
              doc="""
    As Zen-NAS's `compute_zen_score`: every convolution's and linear layer's weight is drawn from
    N(0, 1) and every batch norm is reset to scale 1 and shift 0 (train mode); x and ε are
    Gaussian batches and γ = 0.01; f is the feature map before global pooling. The score is the
    log of the mean over the batch of `Σ |f(x) - f(x + γε)|` plus, over the batch norms, the log
    of the square root of the mean of their running variance. One repetition (the paper averages
    several); the inputs and weights are drawn from the architecture's seed. Gaussian inputs are
    the paper's method: it needs no data.""")

GAMMA = 1e-2


def score_network(net, inputs) -> float:
    import torch
    from torch import nn

    g = inputs.generator()
    pools = [m for m in net.modules() if isinstance(m, nn.AdaptiveAvgPool2d)]
    if not pools:
        return float("nan")
    features = []
    handle = pools[-1].register_forward_hook(lambda module, args, output: features.append(args[0]))
    try:
        with torch.no_grad():
            for m in net.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    m.weight.copy_(torch.randn(m.weight.shape, generator=g))
                elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)) and m.weight is not None:
                    m.weight.fill_(1.0)
                    m.bias.zero_()
            net.train()
            x = torch.randn((inputs.batch, *inputs.shape), generator=g)
            noise = torch.randn((inputs.batch, *inputs.shape), generator=g)
            net(x)
            net(x + GAMMA * noise)
    finally:
        handle.remove()
    change = torch.mean(torch.sum(torch.abs(features[0] - features[1]), dim=[1, 2, 3]))
    scaling = 0.0
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d) and m.running_var is not None:
            scaling += float(torch.log(torch.sqrt(torch.mean(m.running_var))))
    return float(torch.log(change)) + scaling
