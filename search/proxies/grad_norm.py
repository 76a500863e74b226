"""grad_norm: the size of the loss gradient on a batch at initialisation."""
from __future__ import annotations

from .proxy import Proxy, weighted_layers

PROXY = Proxy("grad_norm", data=True, labels=True,
              paper="Abdelfattah et al. 2021, Zero-Cost Proxies for Lightweight NAS (ICLR)",
              summary="sum over layers of the Euclidean norm of ∂L/∂W, L the cross-entropy of a labelled batch",
              doc="""
    For the fixed mini-batch of training images and their labels (train mode), L is the
    cross-entropy loss; the score is the sum over the convolutions and linear layers of the
    Euclidean norm of the gradient of L with respect to the layer's weight. It reads real images
    and labels, so it needs `--data-dir`.""")


def score_network(net, inputs) -> float:
    from torch.nn import functional as F

    net.train()
    net.zero_grad(set_to_none=True)
    F.cross_entropy(net(inputs.images), inputs.labels).backward()
    return float(sum(float(layer.weight.grad.norm()) for layer in weighted_layers(net)
                     if layer.weight.grad is not None))
