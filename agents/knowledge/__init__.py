"""The knowledge base of design ideas (`nader.agents.knowledge`).

    from nader.agents.knowledge import KnowledgeBase, ATTRIBUTE_TREE, Idea

    kb = KnowledgeBase.open("kb/")                 # offline default embedder: all-MiniLM-L6-v2
    kb.add_ideas([Idea("Use depthwise separable convolutions", "paper-1",
                       "operation level", "efficient convolution", "depthwise separable convolution")])
    kb.search("cheap convolutions", k=5)           # [(Idea, cosine similarity), ...]
    kb.sample(random.Random(0))                    # FairNAD fair sampling over main categories

See docs/knowledge.md.
"""
from .attributes import ATTRIBUTE_TREE, ATTRIBUTE_TREES, GRANULARITIES, MAIN_CATEGORIES, check_tags, render_tree
from .embedders import Embedder, EmbedderUnavailable, EndpointEmbedder, LocalEmbedder, default_embedder
from .store import DUPLICATE_THRESHOLD, EmbedderMismatch, Idea, KnowledgeBase, KnowledgeBaseError
from .tagger import Tags, tag

__all__ = [
    "ATTRIBUTE_TREE", "ATTRIBUTE_TREES", "GRANULARITIES", "MAIN_CATEGORIES", "check_tags", "render_tree",
    "Embedder", "EmbedderUnavailable", "EndpointEmbedder", "LocalEmbedder", "default_embedder",
    "DUPLICATE_THRESHOLD", "EmbedderMismatch", "Idea", "KnowledgeBase", "KnowledgeBaseError", "Tags", "tag",
]
