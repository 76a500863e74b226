"""A deterministic, offline tagger: FairNAD attribute tags from keyword rules.

Imported ideas (NADER's pool) carry no tags; the Reader tags the ideas it extracts with the
LLM. This tagger fills the gap without an endpoint. It is a table of rules, each a regular
expression over the lower-cased idea and the tree path it assigns; the first rule that matches
wins, so more specific rules (windowed attention, depthwise separable convolution) come before
general ones (attention, convolution). Ideas that FairNAD's extraction prompt excludes (losses,
training procedures, pruning and quantisation, pre-trained models, point clouds, LiDAR, 3-D)
and ideas no rule matches stay untagged.

Its agreement with hand labels is measured in benchmarks/kb_bench.py and documented in
docs/knowledge.md; it is a coarse stand-in for the LLM's judgement, not a replacement.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from .attributes import MAIN_CATEGORIES


class Tags(NamedTuple):
    granularity: str
    main_category: str
    sub_category: str | None


# Ideas FairNAD's extraction prompt rules out: not architecture, or not the 2-D image domain.
EXCLUDE = re.compile(
    r"\bloss(es)?\b|point[- ]?clouds?|lidar|radar|\bnerfs?\b|pseudo[- ]?labels?|distill|pre-?train|"
    r"\bprun(e|ed|ing|able)\b|quanti[sz]|\bdatasets?\b|\b3-?d\b|\bmesh|voxel|training (process|strategy|procedure|scheme)|"
    r"fine-?tun|contrastive|supervis|augmentation|optimi[sz](er|ation (of|for))")

# (main category, sub-category or None, pattern). Order matters: the first match wins.
RULES: list[tuple[str, str | None, str]] = [
    # efficiency: attention variants before attention
    ("efficient transformer", "windowed attention",
     r"window\w*[- ](based )?(multi-head )?(self-)?attention|shifted window|attention within (each |local |non-overlapping )"),
    ("efficient transformer", "reduced key dimension attention",
     r"spatial[- ]reduction attention|(reduc|downsampl|compress|pool)\w* (the )?(keys?|key-value|kv)\b"),
    ("efficient transformer", "lightweight multi-scale linear attention",
     r"linear(ized)?[- ](complexity )?(self-)?attention|linear complexity|(efficient|lightweight) (self-)?attention"),
    ("efficient transformer", "patch-based transformer", r"patch-based transformer|token (merging|reduction|sparsification)"),
    # recalibration: channel and spatial attention before attention
    ("adaptive feature recalibration", "channel attention (SE block)",
     r"squeeze[- ]and[- ]excitation|\bse[- ](block|module|layer)|channel[- ]?(wise )?attention|recalibrat|channel[- ]wise (re)?weight"),
    ("adaptive feature recalibration", "multi-scale attention",
     r"multi-?(scale|size|resolution) (self-)?attention|spatial attention|attention (maps?|weights) to (re)?weight"),
    ("adaptive feature recalibration", "multi-scale feature extraction",
     r"multi-?scale feature extraction|pyramid pooling|\baspp\b|(atrous|dilated) convolutions? (with|at) (multiple|different)|"
     r"multi-?scale (convolution|kernel)s?|(multiple|different) (kernel|receptive[- ]field) sizes"),
    # efficient convolutions and blocks
    ("efficient convolution", "depthwise separable convolution", r"depth-?wise[- ]separable"),
    ("efficient convolution", "depthwise convolution", r"depth-?wise"),
    ("efficient block structures", "inverted residual block", r"inverted (residual|bottleneck)|mbconv"),
    ("efficient block structures", "convnext block", r"convnext"),
    ("efficient block structures", "swin block", r"\bswin"),
    ("efficient block structures", "grouped convolution blocks", r"resnext|channel shuffle|shufflenet"),
    ("efficient convolution", "grouped convolution", r"(grouped|group-?wise|group) (1 ?[x×] ?1 )?conv"),
    ("efficient block structures", "bottleneck block", r"bottleneck"),
    ("efficient block structures", "pooling-based blocks", r"pool(ing)?[- ]based|poolformer|pooling as (a |the )?token mix"),
    ("efficient block structures", "stochastic depth", r"stochastic depth|drop[- ]?path"),
    ("dynamic computation", None,
     r"dynamic(ally)? (computation|inference|routing|depth|width|network)|early[- ]exit|conditional computation|"
     r"adaptive (computation|inference|depth)|mixture[- ]of[- ]experts|\bmoe\b|skip\w* (layers|blocks) (dynamically|adaptively)"),
    ("dense connectivity for feature reuse", None, r"dense(ly)? (connect|block)|densenet|feature reuse"),
    ("network-wise scaling", "compound scaling", r"compound scaling|efficientnet|scal\w+ (depth, width|width, depth)"),
    ("network-wise scaling", "channel width scaling", r"width multiplier|channel (width )?scaling|scal\w* (the )?(channel )?width"),
    # network structure
    ("network structural patterns", "hybrid convolution and transformer architecture",
     r"hybrid|(convolution\w*|cnns?|conv)\W+(layers? |blocks? |modules? )?(and|with|\+|combined with|alongside)\W+(\w+\W+){0,2}(transformer|attention|self-attention)|"
     r"(transformers?|self-attention|attention)\W+(layers? |blocks? |modules? )?(and|with|\+|combined with|alongside)\W+(\w+\W+){0,2}(convolution|cnn)"),
    ("efficient block structures", "local-global block structure",
     r"local[- ](and[- ])?global (block|module)s?|(blocks?|modules?) (that )?(mix|combin)\w* local and global"),
    ("network structural patterns", "local-global feature extraction",
     r"local\W+(and\W+|\W*)global|global\W+(and\W+|\W*)local|long-range (context|dependenc\w+) (and|with|while) (\w+\W+){0,4}local"),
    ("feature fusion and aggregation", "multi-scale feature fusion",
     r"multi-?(scale|level|resolution) (feature )?(fusion|aggregation|integration)|feature pyramid|\bfpn\b|"
     r"u-?connection|(fuse|fusing|fusion|aggregat\w+) (of )?(multi-?(scale|level)|hierarchical|different[- ]scale)"),
    ("network structural patterns", "multi-stage hierarchical structure",
     r"multi-?stage|four-stage|pyramid (vision )?transformer|\bpvt\b|multi-?scale feature maps"),
    ("network structural patterns", "hierarchical structure", r"hierarch|u-?net|encoder-decoder"),
    ("network structural patterns", "stacked transformer blocks",
     r"stack\w* (of )?(transformer|attention) (blocks|layers)|vision transformer|\bvit\b"),
    ("network structural patterns", "hierarchical channel scaling",
     r"(increas|doubl|expand)\w* (the )?(number of )?channels (at|in|across|with) (each|every|deeper|later)"),
    ("network-wise scaling", "hierarchical feature downsampling",
     r"downsampl|patch merging|strided conv|(reduc|lower)\w* (the )?(spatial )?resolution"),
    ("layer arrangement and order", "layer normalization before attention",
     r"pre-?norm|(layer ?norm\w*|normali[sz]ation) before (the )?(self-)?attention"),
    ("layer arrangement and order", "pre-activation", r"pre-?activation"),
    # operations
    ("normalization", "grn", r"global response normali[sz]ation|\bgrn\b"),
    ("normalization", "batch normalization", r"batch ?norm|\bbn\b"),
    ("normalization", "layer normalization", r"layer ?norm|\bln\b"),
    ("normalization", None, r"normali[sz]ation"),
    ("activation", "hardswish", r"hard-?swish"),
    ("activation", "gelu", r"\bgelu"),
    ("activation", "silu", r"\bsilu|\bswish"),
    ("activation", "relu6", r"\brelu6"),
    ("activation", "relu", r"\brelu"),
    ("activation", None, r"activation function|non-?linearit"),
    ("input encoding", "position embedding", r"position(al)? (embedding|encoding|bias)|relative position"),
    ("input encoding", "patch embedding", r"patch (embedding|partition)|patchify|tokeni[sz]"),
    ("input encoding", "cnn stem", r"\bstem\b|convolutional tokeni"),
    ("residual connections and multi-branch architectures", "learnable layer scale",
     r"layer ?scale|learnable scal(ing|e) (factor|parameter)"),
    ("residual connections and multi-branch architectures", "residual connections", r"residual|skip[- ]connection|shortcut"),
    ("residual connections and multi-branch architectures", "multi-branch architecture",
     r"(multi|dual|two|parallel|multiple)[- ](branch|path|stream|pathway)|re-?parameteri[sz]"),
    ("feature fusion and aggregation", "channel concatenation", r"concatenat"),
    ("feature fusion and aggregation", "element-wise addition", r"element-?wise (addition|sum)|summation"),
    ("feature fusion and aggregation", None, r"\bfus(e|es|ed|ing|ion)\b|aggregat"),
    ("feature extraction operators", "token-mixing-mlp", r"token[- ]mixing|mlp-mixer"),
    ("feature extraction operators", "channel-mixing-mlp", r"channel[- ]mixing"),
    ("feature extraction operators", "input subtraction pooling", r"pool\w* (minus|subtract)"),
    ("feature extraction operators", "mlp", r"\bmlps?\b|multi-?layer perceptron|feed-?forward"),
    ("feature extraction operators", "attention", r"attention|transformer"),
    ("feature extraction operators", "local convolution", r"local (convolution|conv)"),
    ("feature extraction operators", "convolution", r"convolution|\bconv\b|\bcnns?\b"),
]

_COMPILED = [(main, sub, re.compile(pattern)) for main, sub, pattern in RULES]


def tag(text: str) -> Tags | None:
    """The tree path of the first rule matching `text`, or None (excluded or unmatched)."""
    lowered = text.lower()
    if EXCLUDE.search(lowered):
        return None
    for main, sub, pattern in _COMPILED:
        if pattern.search(lowered):
            return Tags(MAIN_CATEGORIES[main][0], main, sub)
    return None
