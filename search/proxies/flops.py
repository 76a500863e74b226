"""flops: the network's floating-point operations, as the compiler counts them."""
from __future__ import annotations

from .proxy import Proxy

PROXY = Proxy("flops", data=False, builds=False,
              paper="a baseline of Abdelfattah et al. 2021, Zero-Cost Proxies for Lightweight NAS (ICLR); also "
                    "Ning et al. 2021, Evaluating Efficient Performance Estimators of Neural Architectures (NeurIPS)",
              summary="the FLOPs of one image through the proxy network (thop's convention; no module is built)",
              doc="""
    The FLOPs of one image through the network at the proxies' fixed width and depth, as `nadc
    cost` counts them (thop's convention; `nader.compiler.network.analyze`, without building a
    module). More is ranked higher. No data.""")


def score_network(net, inputs) -> float:
    return float(inputs.counts["flops"])
