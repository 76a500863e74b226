"""The offline default embedder: all-MiniLM-L6-v2 from its wheel, loaded with the network blocked."""
from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from nader.agents.knowledge import Idea, KnowledgeBase, LocalEmbedder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "knowledge"


@pytest.fixture(scope="module")
def local():
    """The local embedder, loaded and run once while any connection attempt raises."""
    real_connect = socket.socket.connect

    def refuse(self, address):
        raise AssertionError(f"the local embedder tried to connect to {address}")

    socket.socket.connect = refuse
    try:
        embedder = LocalEmbedder()
        embedder.embed(["warm up"])  # loads the model
        yield embedder
    finally:
        socket.socket.connect = real_connect


def test_vectors_are_unit_rows_of_dimension_384(local):
    vectors = local.embed(["Use depthwise separable convolutions.", "Add residual connections.", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)
    assert local.embed([]).shape == (0, 384)


def test_same_text_same_vector(local):
    text = "Insert a squeeze-and-excitation block after each stage."
    alone = local.embed([text])[0]
    in_batch = local.embed(["A much longer sentence about hierarchical vision transformers with shifted windows.",
                            text])[1]
    assert np.abs(alone - in_batch).max() < 1e-4


def test_meaning_not_just_words(local):
    idea = "Use depthwise separable convolutions to reduce computation."
    paraphrase = "Split each convolution into a per-channel filter and a pointwise projection to save FLOPs."
    unrelated = "Label noisy images with a teacher model's pseudo-labels."
    a, b, c = local.embed([idea, paraphrase, unrelated])
    assert a @ b > a @ c + 0.15


def test_knowledge_base_with_the_local_model(tmp_path, local):
    ideas = [Idea("Use depthwise separable convolutions to reduce computation.", "p1"),
             Idea("Recalibrate channel responses with squeeze-and-excitation gating.", "p2"),
             Idea("Add learnable position embeddings to the patch tokens.", "p3"),
             Idea("Using depthwise separable convolutions to reduce the computation.", "p4")]
    with KnowledgeBase.open(tmp_path / "kb", embedder=local) as kb:
        assert kb.add_ideas(ideas) == 3  # the fourth restates the first
        assert kb.stats()["merged_duplicates"] == 1
        hits = kb.search("make convolutions cheaper", k=3)
        assert hits[0][0].paper_id == "p1"
        assert kb.search("attention over channels", k=1)[0][0].paper_id == "p2"
    with KnowledgeBase.open(tmp_path / "kb") as kb:  # the default embedder is the same model
        assert kb.stats()["embedder"] == "local/all-MiniLM-L6-v2"
        assert kb.search("where each token is in the image", k=1)[0][0].paper_id == "p3"


def test_same_vectors_as_sentence_transformers(local):
    """minilm.py runs the wheel's files itself; the reference vectors come from sentence-transformers
    on the same files (fixtures/knowledge/make_minilm_reference.py; importing it here took minutes)."""
    reference = json.loads((FIXTURES / "minilm_reference.json").read_text())
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    assert expected.shape == (len(reference["texts"]), 384)
    assert np.abs(local.embed(reference["texts"]) - expected).max() < 1e-5
