"""Test doubles for the knowledge base (tests only).

`HashingEmbedder` stands for an embedding model: a deterministic bag-of-words vector (each
lower-cased word hashed to one of `dimension` slots), unit length. Texts sharing words are
similar, texts sharing none are orthogonal - enough to exercise storage, merging, filtering
and refusal without loading a model. `FakeEmbeddingClient` stands for the LLM client's
`embed_sync` (the loopback HTTP server of issue 12 point 6 tests the real client).
"""
from __future__ import annotations

import hashlib
import re

import numpy as np


class HashingEmbedder:
    def __init__(self, dimension: int = 64, name: str = "test/hashing-64"):
        self.name = name
        self.dimension = dimension
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts):
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                slot = int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension
                out[row, slot] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


class FakeEmbeddingClient:
    """Duck-types `nader.agents.llm.LLMClient.embed_sync(texts) -> list[list[float]]`."""

    def __init__(self, dimension: int = 8, embedding_model: str | None = "text-embedding-test"):
        self.dimension = dimension
        self.embedding_model = embedding_model
        self.requests: list[list[str]] = []

    def embed_sync(self, texts):
        self.requests.append(list(texts))
        return [[float(len(t) % 7 + 1)] + [float(i + 1) for i in range(self.dimension - 1)] for t in texts]
