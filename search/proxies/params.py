"""params: the network's parameter count, as the compiler counts it."""
from __future__ import annotations

from .proxy import Proxy

PROXY = Proxy("params", data=False, builds=False,
              paper="a baseline of Abdelfattah et al. 2021, Zero-Cost Proxies for Lightweight NAS (ICLR); also "
                    "Ning et al. 2021, Evaluating Efficient Performance Estimators of Neural Architectures (NeurIPS)",
              summary="the parameter count of the proxy network (the compiler's cost model; no module is built)",
              doc="""
    The parameters of the network at the proxies' fixed width and depth, as `nadc cost` counts them
    (`nader.compiler.network.analyze`: the cost model, without building a module). More is
    ranked higher. No data.""")


def score_network(net, inputs) -> float:
    return float(inputs.counts["params"])
