"""jacov: how correlated the network's input Jacobians are over a batch of images."""
from __future__ import annotations

from .proxy import Proxy

PROXY = Proxy("jacov", data=True,
              paper="Mellor et al. 2020, Neural Architecture Search without Training (arXiv:2006.04647v1, the "
                    "Jacobian covariance score); as a NAS proxy: Abdelfattah et al. 2021, Zero-Cost Proxies for "
                    "Lightweight NAS (ICLR)",
              summary="-Σ log(λ + k) + 1/(λ + k), λ the eigenvalues of the correlations of the input Jacobians",
              doc="""
    For the fixed mini-batch of training images (train mode, as Abdelfattah et al.'s `jacob_cov`),
    J holds each image's gradient of the summed outputs with respect to that image, flattened; with
    λ the eigenvalues of J's correlation matrix (images by images) and k = 1e-5 the score is
    `-Σ (log(λ + k) + 1 / (λ + k))`, in float64: networks whose Jacobians differ from image to
    image score high. It reads real images, so it needs `--data-dir`.""")

K = 1e-5


def score_network(net, inputs) -> float:
    import torch

    net.train()
    x = inputs.images.clone().requires_grad_(True)
    y = net(x)
    y.backward(torch.ones_like(y))
    jacobians = x.grad.detach().reshape(x.shape[0], -1).to(torch.float64)
    corr = torch.corrcoef(jacobians)
    if not bool(torch.isfinite(corr).all()):  # an image whose Jacobian is constant: no correlation to read
        return float("nan")
    eigenvalues = torch.linalg.eigvalsh(corr)
    return float(-torch.sum(torch.log(eigenvalues + K) + 1.0 / (eigenvalues + K)))
