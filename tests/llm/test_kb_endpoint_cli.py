"""`nader-search kb import|search` with the endpoint's embeddings (loopback server), and replay."""
from __future__ import annotations

import json

from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from nader.cli import main
from nader.agents.knowledge import KnowledgeBase

POOL = [{"id": i, "paper_id": 100 + i, "inspiration": text} for i, text in enumerate([
    "Use depthwise separable convolutions to reduce computation.",
    "Recalibrate channel responses with squeeze-and-excitation gating.",
    "Add learnable position embeddings to the patch tokens.",
])]


def kb(*args):
    result = CliRunner().invoke(main, ["kb", *map(str, args)], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def endpoint(server):
    return ["--llm-base-url", server.base_url, "--embedding-model", "embedder"]


def embedding_requests(server):
    return [body for path, body in server.requests if path.endswith("/embeddings")]


def test_import_and_search_through_the_endpoint_then_replay(server, tmp_path):
    server.dim = 32
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(POOL))
    done = kb("import", pool, "--kb", tmp_path / "kb", *endpoint(server), "--format", "json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["added"] == 3
    assert [body["input"] for body in embedding_requests(server)] == [[item["inspiration"] for item in POOL]]
    with KnowledgeBase.open(tmp_path / "kb") as base:
        stats = base.stats()
    assert (stats["embedder"], stats["dimension"]) == ("endpoint/embedder", 32)
    assert (tmp_path / "kb" / "runs.sqlite").is_file()  # the calls are recorded beside the ideas

    # The loopback server's vectors are hashes of the text: a stored idea's own text finds it.
    query = POOL[1]["inspiration"]
    found = kb("search", query, "--kb", tmp_path / "kb", "-k", "1", "--format", "json", *endpoint(server))
    assert found.exit_code == 0, found.output
    (hit,) = json.loads(found.stdout)
    assert hit["text"] == query and hit["score"] > 0.999
    assert embedding_requests(server)[-1]["input"] == [query]

    # Without the endpoint configured, the knowledge base says which model it needs.
    refused = kb("search", query, "--kb", tmp_path / "kb")
    assert refused.exit_code == 2
    assert "built with endpoint/embedder embeddings; configure embedding model 'embedder'" in refused.stderr

    # A replay answers the same query from the record, with no endpoint.
    server.close()
    sent = len(server.requests)
    replayed = kb("search", query, "--kb", tmp_path / "kb", "-k", "1", "--format", "json",
                  "--replay", tmp_path / "kb")
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.stdout) == [hit] and len(server.requests) == sent
    missed = kb("search", "a query never asked", "--kb", tmp_path / "kb", "--replay", tmp_path / "kb")
    assert missed.exit_code == 2 and "replay" in missed.stderr


def test_a_local_knowledge_base_refuses_the_endpoint(server, tmp_path):
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(POOL[:1]))
    assert kb("import", pool, "--kb", tmp_path / "kb").exit_code == 0  # the offline local model
    assert embedding_requests(server) == []
    refused = kb("search", "cheap convolutions", "--kb", tmp_path / "kb", *endpoint(server))
    assert refused.exit_code == 2
    assert "built with local/all-MiniLM-L6-v2 embeddings (dimension 384)" in refused.stderr
    assert "cannot be used with endpoint/embedder" in refused.stderr
