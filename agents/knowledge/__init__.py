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

from nader import lazy_exports

_BY_MODULE = {
    "attributes": ("ATTRIBUTE_TREE", "ATTRIBUTE_TREES", "GRANULARITIES", "MAIN_CATEGORIES", "check_tags",
                   "render_tree"),
    "embedders": ("Embedder", "EmbedderUnavailable", "EndpointEmbedder", "LocalEmbedder", "default_embedder"),
    "store": ("DUPLICATE_THRESHOLD", "EmbedderMismatch", "Idea", "KnowledgeBase", "KnowledgeBaseError"),
    "tagger": ("Tags", "tag"),
}
_EXPORTS = {name: module for module, names in _BY_MODULE.items() for name in names}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
