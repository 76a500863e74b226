"""snip: how much the loss on a batch depends on each weight's connection at initialisation."""
from __future__ import annotations

from .proxy import Proxy, weighted_layers

PROXY = Proxy("snip", data=True, labels=True,
              paper="Lee et al. 2019, SNIP: Single-shot Network Pruning based on Connection Sensitivity (ICLR); as a "
                    "NAS proxy: Abdelfattah et al. 2021, Zero-Cost Proxies for Lightweight NAS (ICLR)",
              summary="sum over weights of |θ · ∂L/∂θ|, L the cross-entropy of a batch of labelled images",
              doc="""
    For the fixed mini-batch of training images and their labels (train mode), L is the
    cross-entropy loss; the score is the sum over the weights of the convolutions and linear
    layers of `|θ · ∂L/∂θ|`, the gradient of L with respect to a multiplicative mask on each
    connection at 1. It reads real images and labels, so it needs `--data-dir`.""")


def score_network(net, inputs) -> float:
    from torch.nn import functional as F

    net.train()
    net.zero_grad(set_to_none=True)
    F.cross_entropy(net(inputs.images), inputs.labels).backward()
    total = 0.0
    for layer in weighted_layers(net):
        if layer.weight.grad is not None:
            total += float((layer.weight.detach() * layer.weight.grad).abs().sum())
    return total
