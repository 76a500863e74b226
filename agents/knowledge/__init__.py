"""The knowledge base of design ideas (`nader.agents.knowledge`).

    from nader.agents.knowledge import KnowledgeBase, ATTRIBUTE_TREE, Idea

    kb = KnowledgeBase.open("kb/")                 # offline default embedder: all-MiniLM-L6-v2
    kb.add_ideas([Idea("Use depthwise separable convolutions", "paper-1",
                       "operation level", "efficient convolution", "depthwise separable convolution")])
    kb.search("cheap convolutions", k=5)           # [(Idea, cosine similarity), ...]
    kb.sample(random.Random(0))                    # FairNAD fair sampling over main categories

See docs/knowledge.md. Names are imported on first use, so that `nader-search --help` does not
pay for numpy.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    ".attributes": ("ATTRIBUTE_TREE", "ATTRIBUTE_TREES", "GRANULARITIES", "MAIN_CATEGORIES", "check_tags",
                    "render_tree"),
    ".embedders": ("Embedder", "EmbedderUnavailable", "EndpointEmbedder", "LocalEmbedder", "default_embedder"),
    ".store": ("DUPLICATE_THRESHOLD", "EmbedderMismatch", "Idea", "KnowledgeBase", "KnowledgeBaseError"),
    ".tagger": ("Tags", "tag"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
