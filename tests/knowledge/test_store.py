"""The knowledge base's storage: ideas in SQLite, vectors in faiss, merging, refusal, fair sampling.

These use a hashing bag-of-words test embedder (knowledge_helpers.py); test_local_model.py
runs the real offline model.
"""
from __future__ import annotations

import collections
import random
import sqlite3

import numpy as np
import pytest

from knowledge_helpers import FakeEmbeddingClient, HashingEmbedder
from nader.agents.knowledge import EmbedderMismatch, EndpointEmbedder, Idea, KnowledgeBase, KnowledgeBaseError
from nader.agents.knowledge.store import INDEX_NAME

DSCONV = Idea("Use depthwise separable convolutions to cut FLOPs", "p1",
              "operation level", "efficient convolution", "depthwise separable convolution")
SE = Idea("Reweight channels with a squeeze and excitation gate", "p1",
          "block and connectivity level", "adaptive feature recalibration", "channel attention (SE block)")
SWIN = Idea("Restrict self attention to shifted windows", "p2",
            "operation level", "efficient transformer", "windowed attention")


@pytest.fixture
def embedder():
    return HashingEmbedder()


@pytest.fixture
def kb(tmp_path, embedder):
    with KnowledgeBase.open(tmp_path / "kb", embedder=embedder) as base:
        yield base


def test_add_search_and_reopen(tmp_path, kb, embedder):
    assert kb.add_ideas([DSCONV, SE, SWIN]) == 3
    hits = kb.search("shifted windows for self attention", k=2)
    assert hits[0][0].text == SWIN.text and hits[0][0].id is not None
    assert hits[0][1] > hits[1][1]
    cosine = (embedder.embed([SWIN.text]) @ embedder.embed(["shifted windows for self attention"]).T).item()
    assert abs(hits[0][1] - cosine) < 1e-5
    kb.close()
    with KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder()) as again:
        assert len(again) == 3
        assert again.search("squeeze and excitation", k=1)[0][0].main_category == "adaptive feature recalibration"
        assert again.stats()["dimension"] == 64


def test_files_are_a_faiss_index_and_sqlite(tmp_path, kb):
    kb.add_ideas([DSCONV, SE])
    import faiss

    index = faiss.read_index(str(tmp_path / "kb" / INDEX_NAME))
    assert index.ntotal == 2 and index.d == 64
    conn = sqlite3.connect(tmp_path / "kb" / "kb.sqlite")
    rows = conn.execute("SELECT text, paper_id, granularity, main_category, sub_category FROM ideas ORDER BY id").fetchall()
    assert rows[0] == (DSCONV.text, "p1", "operation level", "efficient convolution", "depthwise separable convolution")
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta["embedder"] == "test/hashing-64" and meta["dimension"] == "64"


def test_near_duplicates_merge(kb, embedder):
    first = Idea("Use depthwise separable convolutions to cut FLOPs in every block", "p1")
    reworded = Idea("Use depthwise separable convolutions to cut the FLOPs in every block", "p2")
    other = Idea("Add learnable position embeddings to the patch tokens", "p3")
    assert kb.add_ideas([first, reworded, other]) == 2  # merged within one call
    assert kb.add_ideas([Idea("use  DEPTHWISE separable convolutions to cut FLOPs in every block", "p4")]) == 0
    stats = kb.stats()
    assert stats["ideas"] == 2 and stats["merged_duplicates"] == 2
    assert {kb.has_source(p) for p in ("p1", "p2", "p3", "p4")} == {True}
    # a lower threshold merges less similar texts too; a threshold above 1 merges nothing but exact text
    assert kb.add_ideas([Idea("Depthwise separable convolutions in every block", "p5")], threshold=0.5) == 0
    assert kb.add_ideas([Idea("Depthwise separable convolutions in every block", "p6")], threshold=1.01) == 1


def test_reimport_costs_no_embedding(kb, embedder):
    kb.add_ideas([DSCONV, SE, SWIN])
    texts_before = embedder.texts_embedded
    assert kb.add_ideas([DSCONV, SE, SWIN]) == 0
    assert embedder.texts_embedded == texts_before


def test_untagged_ideas_get_keyword_tags(kb):
    kb.add_ideas([Idea("Insert a squeeze-and-excitation block after each stage", "p9"),
                  Idea("Use a cosine learning-rate schedule", "p9")])
    se, schedule = kb.get(1), kb.get(2)
    assert (se.main_category, se.tagged_by) == ("adaptive feature recalibration", "keyword-rules")
    assert schedule.main_category is None and schedule.tagged_by is None
    assert kb.get(3) is None


def test_given_tags_are_checked(kb):
    with pytest.raises(ValueError, match="not a main category of 'network level'"):
        kb.add_ideas([Idea("x y z", "p", "network level", "normalization", None)])
    assert len(kb) == 0
    with pytest.raises(ValueError, match="non-empty text"):
        kb.add_ideas([Idea("   ", "p")])


def test_filters(kb):
    kb.add_ideas([DSCONV, SE, SWIN])
    hits = kb.search("depthwise separable convolutions", k=5, filters={"granularity": "block and connectivity level"})
    assert [idea.text for idea, _ in hits] == [SE.text]
    assert kb.search("anything", filters={"main_category": "normalization"}) == []
    assert {i.text for i, _ in kb.search("convolutions", filters={"paper_id": "p2"})} == {SWIN.text}
    with pytest.raises(KnowledgeBaseError, match="cannot filter on colour"):
        kb.search("x", filters={"colour": "red"})


def test_other_embedder_is_refused(tmp_path, kb):
    kb.add_ideas([DSCONV])
    kb.close()
    with pytest.raises(EmbedderMismatch, match=r"built with test/hashing-64 embeddings \(dimension 64\).*other-model"):
        KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder(32, name="test/other-model"))
    # without an embedder: stats work, queries say which model to configure
    with KnowledgeBase.open(tmp_path / "kb") as base:
        assert base.stats()["ideas"] == 1
        with pytest.raises(EmbedderMismatch, match="built with test/hashing-64"):
            base.search("depthwise")


def test_same_name_other_dimension_is_refused(tmp_path, kb):
    kb.add_ideas([DSCONV])
    kb.close()
    with KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder(32)) as base:
        with pytest.raises(EmbedderMismatch, match="dimension 32.*holds dimension 64"):
            base.search("depthwise")


def test_index_rebuilt_from_sqlite_when_missing_or_stale(tmp_path, kb):
    kb.add_ideas([DSCONV, SE])
    kb.close()
    index_file = tmp_path / "kb" / INDEX_NAME
    index_file.unlink()
    with KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder()) as base:
        assert base.search("squeeze and excitation", k=1)[0][0].text == SE.text
    assert index_file.exists()
    stale = index_file.read_bytes()
    with KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder()) as base:
        base.add_ideas([SWIN])
    index_file.write_bytes(stale)  # an index from before the last write
    with KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder()) as base:
        assert base.search("shifted windows self attention", k=1)[0][0].text == SWIN.text


def test_sources(kb):
    assert not kb.has_source("arxiv:1")
    kb.add_source("arxiv:1", title="An irrelevant paper", relevant=False)
    assert kb.has_source("arxiv:1") and kb.stats()["papers"] == 1 and len(kb) == 0


def _tagged(main: str, sub: str | None, n: int, start: int) -> list[Idea]:
    from nader.agents.knowledge import MAIN_CATEGORIES

    granularity = MAIN_CATEGORIES[main][0]
    return [Idea(f"idea {start + i} word{start + i} token{start + i}", "p", granularity, main, sub) for i in range(n)]


def test_sample_is_uniform_over_main_categories(kb):
    # 1 + 20 + 3 ideas: uniform over ideas would draw "normalization" 20 times in 24
    kb.add_ideas(_tagged("activation", "gelu", 1, 0) + _tagged("normalization", "batch normalization", 20, 100)
                 + _tagged("efficient transformer", "windowed attention", 3, 200))
    kb.add_ideas([Idea("zzz untagged qqq", "p")])
    rng = random.Random(7)
    counts = collections.Counter(kb.sample(rng).main_category for _ in range(3000))
    assert set(counts) == {"activation", "normalization", "efficient transformer"}
    for n in counts.values():
        assert 850 < n < 1150
    by_granularity = collections.Counter(kb.sample(rng, by="granularity").granularity for _ in range(2000))
    assert set(by_granularity) == {"operation level"}
    uniform = collections.Counter(kb.sample(rng, by=None).main_category for _ in range(2500))
    assert uniform["normalization"] > 1800 and uniform[None] > 0
    # numpy generators work too, and the draw is reproducible
    a = [kb.sample(np.random.default_rng(3)).id for _ in range(5)]
    b = [kb.sample(np.random.default_rng(3)).id for _ in range(5)]
    assert a == b
    with pytest.raises(KnowledgeBaseError, match="cannot sample by"):
        kb.sample(rng, by="paper_id")


def test_sample_of_empty_or_untagged_kb(kb):
    assert kb.sample(random.Random(0)) is None
    kb.add_ideas([Idea("zzz untagged qqq", "p")])
    assert kb.sample(random.Random(0)) is None
    assert kb.sample(random.Random(0), by=None).text == "zzz untagged qqq"


def test_a_file_is_not_a_knowledge_base(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(KnowledgeBaseError, match="is a file"):
        KnowledgeBase.open(tmp_path / "file", embedder=HashingEmbedder())
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "kb.sqlite").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(KnowledgeBaseError, match="not a knowledge base database"):
        KnowledgeBase.open(tmp_path / "bad", embedder=HashingEmbedder())


# -- the endpoint embedder adapter (the LLM client's embed) ---------------------------------------

def test_endpoint_embedder_adapts_the_client(tmp_path):
    client = FakeEmbeddingClient(dimension=8)
    embedder = EndpointEmbedder(client)
    assert embedder.name == "endpoint/text-embedding-test"
    vectors = embedder.embed(["ab", "abcd"])
    assert vectors.shape == (2, 8) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert embedder.dimension == 8 and client.requests == [["ab", "abcd"]]
    with KnowledgeBase.open(tmp_path / "kb", embedder=embedder) as base:
        assert base.add_ideas([DSCONV]) == 1
        assert base.stats()["embedder"] == "endpoint/text-embedding-test"
    with pytest.raises(EmbedderMismatch, match="endpoint/text-embedding-test"):
        KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder())


def test_endpoint_embedder_needs_a_model_name_and_checks_replies():
    from nader.agents.knowledge import EmbedderUnavailable

    with pytest.raises(EmbedderUnavailable, match="embedding model"):
        EndpointEmbedder(FakeEmbeddingClient(embedding_model=None))
    short = FakeEmbeddingClient()
    short.embed_sync = lambda texts: [[1.0, 0.0]]
    with pytest.raises(ValueError, match="1 embeddings for 2 texts"):
        EndpointEmbedder(short, model="m").embed(["a", "b"])


def test_other_schema_is_refused(tmp_path, kb):
    kb.close()
    conn = sqlite3.connect(tmp_path / "kb" / "kb.sqlite")
    with conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    conn.close()
    with pytest.raises(KnowledgeBaseError, match="has schema 0; this version reads schema 1"):
        KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder())
