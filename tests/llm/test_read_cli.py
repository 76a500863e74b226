"""`nader-search read` end to end: loopback server, the real knowledge base, replay, caps, errors."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from nader.cli import main
from nader.agents.knowledge import KnowledgeBase
from test_reader import PAPER_TEXT, scripted_reader


def papers_file(tmp_path, count: int = 1):
    path = tmp_path / "papers.jsonl"
    rows = [{"id": f"gated-{i}", "title": f"Gated block {i}", "abstract": "A gated block.", "text": PAPER_TEXT}
            for i in range(count)]
    rows.append({"id": "cats", "title": "Dataset of cats", "abstract": "Many cats.", "text": "Cats."})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def read(*args):
    return CliRunner().invoke(main, ["read", *map(str, args)], catch_exceptions=False)


def endpoint(server):
    return ["--llm-base-url", server.base_url, "--llm-model", "local-model", "--embedding-model", "embedder"]


def test_read_into_the_knowledge_base_then_again_for_free(server, tmp_path):
    server.responder = scripted_reader
    server.dim = 32
    papers = papers_file(tmp_path)
    done = read(papers, "--kb", tmp_path / "kb", *endpoint(server))
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()  # the progress lines go to stderr
    assert lines[0].startswith("added") and "2 new of 2 ideas" in lines[0]
    assert lines[1].startswith("irrelevant") and "Dataset of cats" in lines[1]
    assert lines[2].startswith("LLM: 5 endpoint calls") and "0 failed" in lines[2]  # 4 chat, 1 embeddings
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        stats = kb.stats()
        assert stats["ideas"] == 2 and stats["papers"] == 2 and stats["embedder"] == "endpoint/embedder"
        assert stats["main_category"] == {"activation": 1, "residual connections and multi-branch architectures": 1}
    assert (tmp_path / "kb" / "runs.sqlite").is_file()
    sent = len(server.requests)
    again = read(papers, "--kb", tmp_path / "kb", *endpoint(server), "--format", "json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert [p["status"] for p in report["papers"]] == ["known", "known"]
    assert report["usage"]["total"]["calls"] == 0 and len(server.requests) == sent


def test_replay_reads_without_an_endpoint(server, tmp_path):
    server.responder = scripted_reader
    server.dim = 32
    papers = papers_file(tmp_path)
    first = read(papers, "--kb", tmp_path / "kb", *endpoint(server), "--format", "json")
    assert first.exit_code == 0, first.output
    server.close()
    replayed = read(papers, "--kb", tmp_path / "kb2", "--replay", tmp_path / "kb", "--format", "json")
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.stdout)["papers"] == json.loads(first.stdout)["papers"]
    assert json.loads(replayed.stdout)["usage"]["total"]["recorded_calls"] >= 4
    with KnowledgeBase.open(tmp_path / "kb2") as kb:
        assert kb.stats()["ideas"] == 2
    # Another paper was never read in the recorded run: the replay stops and says why.
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"title": "Unseen", "abstract": "New.", "text": ""}) + "\n")
    missed = read(other, "--kb", tmp_path / "kb3", "--replay", tmp_path / "kb")
    assert missed.exit_code == 1
    assert "stopped: replay miss" in missed.output


def test_token_cap_stops_and_a_higher_cap_resumes(server, tmp_path):
    server.responder = scripted_reader
    server.dim = 32
    papers = papers_file(tmp_path, count=3)
    cap = ["--llm-max-tokens", "6000", "--llm-concurrency", "1"]
    stopped = read(papers, "--kb", tmp_path / "kb", *endpoint(server), *cap)
    assert stopped.exit_code == 1
    assert "stopped: token cap reached" in stopped.output and "run again to resume" in stopped.output
    first = [line.split()[0] for line in stopped.stdout.splitlines()[:4]]
    assert "stopped" in first and "added" in first
    resumed = read(papers, "--kb", tmp_path / "kb", *endpoint(server), "--llm-max-tokens", "100000")
    assert resumed.exit_code == 0, resumed.output
    statuses = [line.split()[0] for line in resumed.stdout.splitlines()[:4]]
    assert all(s == "known" for s, f in zip(statuses, first) if f in ("added", "irrelevant"))
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.stats()["papers"] == 4


def test_default_embeddings_are_the_offline_local_model(server, tmp_path):
    server.responder = scripted_reader
    done = read(papers_file(tmp_path), "--kb", tmp_path / "kb", "--llm-base-url", server.base_url,
                "--llm-model", "local-model")
    assert done.exit_code == 0, done.output
    assert not [p for p, _ in server.requests if p.endswith("/embeddings")]
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.stats()["embedder"].startswith("local/") and kb.stats()["ideas"] == 2


@pytest.mark.parametrize("args, message", [
    (["--kb", "KB"], "no LLM endpoint configured"),
    (["--kb", "KB", "--llm-base-url", "http://127.0.0.1:9/v1"], "no model configured"),
    (["--kb", "KB", "--replay", "NOWHERE"], "no recorded run at NOWHERE"),
])
def test_configuration_errors_are_one_line(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    papers = papers_file(tmp_path)
    done = read(papers, *args)
    assert done.exit_code == 2
    (line,) = done.output.strip().splitlines()
    assert line.startswith(f"error: {message}")
    assert "Traceback" not in done.output


def test_unreadable_paper_is_a_usage_error(tmp_path):
    done = read(tmp_path / "missing.pdf", "--kb", tmp_path / "kb", "--llm-base-url", "http://127.0.0.1:9/v1",
                "--llm-model", "m")
    assert done.exit_code == 2 and "missing.pdf: no such file" in done.output
