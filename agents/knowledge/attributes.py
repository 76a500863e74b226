"""FairNAD's model design attribute tree, as data.

Transcribed from Tables 9 (performance) and 10 (efficiency) of the FairNAD paper
(Appendix C.1): three granularities, 15 main categories, 55 sub-category entries. Names are
the paper's, lower-cased ("siLU" is written "silu"). A sub-category may appear under several
main categories ("grouped convolution", "stochastic depth"), as in the paper; "dense
connectivity for feature reuse" has no sub-category there, so its list is empty.

`ATTRIBUTE_TREES` keeps the two tables apart (the Reader's prompts show them as two lists);
`ATTRIBUTE_TREE` is their union, granularity -> main category -> sub-categories, which is what
ideas are tagged with and what fair sampling is uniform over.
"""
from __future__ import annotations

GRANULARITIES = ("operation level", "block and connectivity level", "network level")

ATTRIBUTE_TREES: dict[str, dict[str, dict[str, list[str]]]] = {
    "performance": {  # Table 9
        "operation level": {
            "feature extraction operators": [
                "attention", "mlp", "token-mixing-mlp", "grouped convolution", "local convolution",
                "convolution", "input subtraction pooling", "channel-mixing-mlp",
            ],
            "normalization": ["grn", "batch normalization", "layer normalization"],
            "activation": ["silu", "gelu", "relu", "relu6", "hardswish"],
        },
        "block and connectivity level": {
            "input encoding": ["position embedding", "cnn stem", "patch embedding"],
            "residual connections and multi-branch architectures": [
                "residual connections", "multi-branch architecture", "learnable layer scale",
            ],
            "feature fusion and aggregation": [
                "multi-scale feature fusion", "element-wise addition", "channel concatenation",
            ],
            "adaptive feature recalibration": [
                "channel attention (SE block)", "multi-scale attention", "multi-scale feature extraction",
            ],
        },
        "network level": {
            "network structural patterns": [
                "local-global feature extraction", "multi-stage hierarchical structure", "hierarchical structure",
                "stacked transformer blocks", "hierarchical channel scaling",
                "hybrid convolution and transformer architecture",
            ],
            "layer arrangement and order": ["pre-activation", "layer normalization before attention"],
        },
    },
    "efficiency": {  # Table 10
        "operation level": {
            "efficient convolution": [
                "depthwise convolution", "grouped convolution", "depthwise separable convolution",
            ],
            "efficient transformer": [
                "windowed attention", "reduced key dimension attention", "lightweight multi-scale linear attention",
                "patch-based transformer",
            ],
        },
        "block and connectivity level": {
            "efficient block structures": [
                "bottleneck block", "grouped convolution blocks", "pooling-based blocks", "convnext block",
                "local-global block structure", "inverted residual block", "swin block", "stochastic depth",
            ],
            "dense connectivity for feature reuse": [],
        },
        "network level": {
            "network-wise scaling": ["hierarchical feature downsampling", "compound scaling", "channel width scaling"],
            "dynamic computation": ["stochastic depth"],
        },
    },
}


def _union(trees: dict[str, dict[str, dict[str, list[str]]]]) -> dict[str, dict[str, list[str]]]:
    merged: dict[str, dict[str, list[str]]] = {g: {} for g in GRANULARITIES}
    for tree in trees.values():
        for granularity, mains in tree.items():
            for main, subs in mains.items():
                if main in merged[granularity]:
                    raise ValueError(f"main category {main!r} appears in two tables")
                merged[granularity][main] = list(subs)
    return merged


ATTRIBUTE_TREE: dict[str, dict[str, list[str]]] = _union(ATTRIBUTE_TREES)

# main category -> (granularity, target): each main category belongs to one granularity.
MAIN_CATEGORIES: dict[str, tuple[str, str]] = {
    main: (granularity, target)
    for target, tree in ATTRIBUTE_TREES.items()
    for granularity, mains in tree.items()
    for main in mains
}


def check_tags(granularity: str | None, main_category: str | None, sub_category: str | None) -> str | None:
    """Why these tags are not a path of the tree (None when they are, or when all are None).

    A partial path is allowed from the top (granularity only; granularity and main category).
    """
    if granularity is None:
        if main_category is not None or sub_category is not None:
            return "a main category or sub-category needs a granularity"
        return None
    if granularity not in ATTRIBUTE_TREE:
        return f"unknown granularity {granularity!r} (one of: {', '.join(GRANULARITIES)})"
    mains = ATTRIBUTE_TREE[granularity]
    if main_category is None:
        return "a sub-category needs a main category" if sub_category is not None else None
    if main_category not in mains:
        return f"{main_category!r} is not a main category of {granularity!r} (one of: {', '.join(mains)})"
    if sub_category is not None and sub_category not in mains[main_category]:
        subs = ", ".join(mains[main_category]) or "none"
        return f"{sub_category!r} is not a sub-category of {main_category!r} (one of: {subs})"
    return None


def render_tree(target: str | None = None) -> str:
    """The tree as the indented text that prompts and docs show ("granularity:", "  main: [subs]")."""
    trees = ATTRIBUTE_TREES if target is None else {target: ATTRIBUTE_TREES[target]}
    tree = _union(trees)
    lines = []
    for granularity, mains in tree.items():
        if not mains:
            continue
        lines.append(f"{granularity}:")
        lines.extend(f"  {main}: [{', '.join(subs)}]" for main, subs in mains.items())
    return "\n".join(lines)
