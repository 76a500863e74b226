"""Architectures as feature vectors, for a performance predictor (`strategies/predictor.py`).

Two encodings, one per space, both read from the architecture alone (nothing about any
benchmark's accuracies):

* **A NAS-Bench-201 cell**: the one-hot adjacency encoding of White et al. (2020, "A study on
  encodings for neural architecture search"): for each of the cell's 6 edges, which of the 5
  operations it carries (30 features), read on the cell's effective form (`CellStructure.effective`:
  an operation that cannot reach the output, or reads a node that is always zero, counts as
  `none`). So strings of one network, which share a canonical hash, are encoded alike as far as
  their dead edges go, and a model does not credit an operation that computes nothing. Then
  how many edges carry each operation (5 features): what one edge's results teach about an
  operation then counts for the others. With the first few results all differing on one edge
  (a warm start's best cells are often neighbours), the one-hot alone says nothing about the
  other edges; on ImageNet16-120 the counts took the predictor's regret at 10 queries from 0.37
  to 0.00 (benchmarks/README.md).
* **A block of the language**: a bag of the operations of each block (base, stem, downsample)
  and of the operation pairs along its edges, a first-order path encoding (BANANAS's paths,
  cut at length two so that the vector stays small for any graph). An operation is named with
  its kernel size and stride when it has them (`Conv2d/k3/s1`), not with its widths, which the
  budget's fit sets.

`cell_vector` gives a list; `block_bag` a dict (name -> count) that scikit-learn's `DictVectorizer`
turns into columns over the architectures at hand.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Dict, List

from nader.dsl.parser import parse

from .spaces import nb201

#: a cell's encoding's length: the one-hot (edges x operations), then the operation counts
CELL_FEATURES = (len(nb201.EDGES) + 1) * len(nb201.OPS)
_OP_INDEX = {op: i for i, op in enumerate(nb201.OPS)}
_SHAPE_PARAMS = ("kernel_size", "stride")


@lru_cache(maxsize=16384)
def _cell_vector(key: str) -> tuple:
    ops = nb201.CellStructure.parse(key).effective().ops
    out = [0.0] * (len(ops) * len(nb201.OPS))
    for edge, op in enumerate(ops):
        out[edge * len(nb201.OPS) + _OP_INDEX[op]] = 1.0
    out += [float(ops.count(op)) for op in nb201.OPS]
    return tuple(out)


def cell_vector(key: str) -> List[float]:
    """The encoding of a cell string (`|op~0|+|op~0|op~1|+...`), on its effective form: 1 where an
    edge carries an operation, then the number of edges carrying each operation."""
    return list(_cell_vector(key))


def _label(node) -> str:
    shape = [f"{p[0]}{getattr(node.params[p], 'value', node.params[p])}" for p in _SHAPE_PARAMS
             if node.params.get(p) is not None]
    return "/".join([node.op_name, *shape])


def _role(name: str) -> str:
    """A block's role as its name says it (`X_stem`, `X_downsample`; the base block is named `X`)."""
    for role in ("stem", "downsample"):
        if name.endswith(f"_{role}"):
            return role
    return "base"


@lru_cache(maxsize=4096)
def _bag(text: str) -> tuple:
    counts: Dict[str, float] = {}
    for block in parse(text).program.blocks:
        role, labels = _role(block.name), {n.id: _label(n) for n in block.nodes}
        for label in labels.values():
            key = f"{role}:{label}"
            counts[key] = counts.get(key, 0.0) + 1.0
        for edge in block.edges:
            for source in edge.sources:
                if source in labels and edge.target in labels:
                    key = f"{role}:{labels[source]}>{labels[edge.target]}"
                    counts[key] = counts.get(key, 0.0) + 1.0
    return tuple(sorted(counts.items()))


def block_bag(text: str) -> Dict[str, float]:
    """The bag of operations and operation pairs of an architecture's blocks (empty for text that does not parse)."""
    return dict(_bag(text or ""))


__all__ = ["CELL_FEATURES", "block_bag", "cell_vector"]
