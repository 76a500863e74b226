"""synflow: the synaptic flow through the network at initialisation, with no data."""
from __future__ import annotations

from .proxy import Proxy, weighted_layers

PROXY = Proxy("synflow", data=False,
              paper="Tanaka et al. 2020, Pruning neural networks without any data by iteratively conserving synaptic "
                    "flow (NeurIPS); as a NAS proxy: Abdelfattah et al. 2021, Zero-Cost Proxies for Lightweight NAS "
                    "(ICLR)",
              summary="sum over weights of |θ · ∂R/∂θ| with every weight made positive and an all-ones input",
              doc="""
    In float64 and eval mode (batch norm with its initial statistics: an identity), every
    parameter is replaced by its absolute value, an all-ones input of batch 1 goes through, and R
    is the sum of the outputs; the score is the sum of `|θ · ∂R/∂θ|` over the weights of the
    convolutions and linear layers (Abdelfattah et al.'s `synflow`, which also leaves batch norm
    out). No data: the input is ones.""")


def score_network(net, inputs) -> float:
    import torch

    net = net.double().eval()
    with torch.no_grad():
        for p in net.parameters():
            p.abs_()
    net.zero_grad(set_to_none=True)
    net(torch.ones((1, *inputs.shape), dtype=torch.float64)).sum().backward()
    total = 0.0
    for layer in weighted_layers(net):
        if layer.weight.grad is not None:
            total += float((layer.weight.detach() * layer.weight.grad).abs().sum())
    return total
