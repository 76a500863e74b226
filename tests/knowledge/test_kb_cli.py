"""`nader-search kb import|search|stats`: formats, exit statuses, one-line errors, NADER's pool."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from knowledge_helpers import HashingEmbedder
from nader.cli import main
from nader.agents.knowledge import Idea, KnowledgeBase

POOL = [
    {"id": 1, "paper_id": 10, "inspiration": "Use depthwise separable convolutions to reduce computation."},
    {"id": 2, "paper_id": 10, "inspiration": "Recalibrate channel responses with squeeze-and-excitation gating."},
    {"id": 3, "paper_id": 11, "inspiration": "Add learnable position embeddings to the patch tokens."},
    {"id": 4, "paper_id": 12, "inspiration": "Train with a contrastive loss between two augmented views."},
    {"id": 5, "paper_id": 13, "inspiration": "Using depthwise separable convolutions to reduce the computation."},
]


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def pool_file(tmp_path):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(POOL))
    return path


def test_help_lists_kb_commands():
    assert "kb" in invoke("--help").output
    out = invoke("kb", "--help").output
    for command in ("import", "search", "stats"):
        assert command in out


def test_import_search_stats(tmp_path, pool_file):
    kb = tmp_path / "kb"
    result = invoke("kb", "import", pool_file, "--kb", kb, "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["read"], report["added"], report["merged"]) == (5, 4, 1)
    assert report["tagged_by_keywords"] == 3 and report["untagged"] == 1  # the loss idea stays untagged

    result = invoke("kb", "search", "make convolutions cheaper", "--kb", kb, "-k", "2", "--format", "json")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert [h["rank"] for h in hits] == [1, 2] and hits[0]["score"] >= hits[1]["score"]
    assert hits[0]["paper_id"] == "10" and hits[0]["main_category"] == "efficient convolution"
    assert set(hits[0]) >= {"id", "text", "granularity", "sub_category", "tagged_by"}

    text = invoke("kb", "search", "make convolutions cheaper", "--kb", kb, "-k", "1").output
    assert text.startswith("1. ") and "[operation level / efficient convolution / depthwise separable convolution]" in text

    filtered = json.loads(invoke("kb", "search", "make convolutions cheaper", "--kb", kb, "--format", "json",
                                 "--granularity", "block and connectivity level").stdout)
    assert {h["main_category"] for h in filtered} == {"adaptive feature recalibration", "input encoding"}

    stats = json.loads(invoke("kb", "stats", "--kb", kb, "--format", "json").stdout)
    assert (stats["ideas"], stats["papers"], stats["merged_duplicates"], stats["untagged"]) == (4, 4, 1, 1)
    assert stats["embedder"] == "local/all-MiniLM-L6-v2" and stats["dimension"] == 384
    out = invoke("kb", "stats", "--kb", kb).output
    assert "4 ideas from 4 papers, 1 near-duplicates merged" in out

    again = json.loads(invoke("kb", "import", pool_file, "--kb", kb, "--format", "json").stdout)
    assert again["added"] == 0 and again["ideas"] == 4


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "not JSON"),
    (json.dumps({"id": 1}), "expected a JSON list"),
    (json.dumps([{"id": 1, "paper_id": 1, "inspiration": "ok"}, {"id": 2, "paper_id": 1}]),
     "item 1: 'inspiration' must be a non-empty string"),
    (json.dumps([{"id": 1, "paper_id": [1], "inspiration": "ok"}]), "item 0: 'paper_id' must be"),
    (json.dumps([{"id": 1, "paper_id": 1, "inspiration": "ok", "granularity": "network level",
                  "main_category": "normalization"}]), "item 0: 'normalization' is not a main category"),
])
def test_bad_pool_files_exit_2_with_one_line(tmp_path, content, fragment):
    path = tmp_path / "pool.json"
    path.write_text(content)
    result = invoke("kb", "import", path, "--kb", tmp_path / "kb")
    assert result.exit_code == 2
    assert fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_pool_tags_are_kept(tmp_path):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps([{"id": 1, "paper_id": "x", "inspiration": "Stack more blocks in the last stage.",
                                 "granularity": "network level", "main_category": "network-wise scaling"}]))
    assert invoke("kb", "import", path, "--kb", tmp_path / "kb").exit_code == 0
    stats = json.loads(invoke("kb", "stats", "--kb", tmp_path / "kb", "--format", "json").stdout)
    assert stats["tagged_by"] == {"given": 1} and stats["main_category"] == {"network-wise scaling": 1}


def test_missing_inputs_exit_2(tmp_path):
    result = invoke("kb", "import", tmp_path / "absent.json", "--kb", tmp_path / "kb")
    assert result.exit_code == 2 and "cannot read" in result.stderr
    result = invoke("kb", "search", "x", "--kb", tmp_path / "nowhere")
    assert result.exit_code == 2 and "no knowledge base at" in result.stderr
    assert not (tmp_path / "nowhere").exists()
    assert invoke("kb", "stats", "--kb", tmp_path / "nowhere").exit_code == 2
    assert invoke("kb", "search", "x").exit_code == 2  # --kb is required


def test_knowledge_base_of_another_model_is_refused(tmp_path):
    with KnowledgeBase.open(tmp_path / "kb", embedder=HashingEmbedder()) as kb:
        kb.add_ideas([Idea("Use depthwise separable convolutions.", "p1")])
    result = invoke("kb", "search", "cheap convolutions", "--kb", tmp_path / "kb")
    assert result.exit_code == 2
    assert "built with test/hashing-64 embeddings" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    stats = invoke("kb", "stats", "--kb", tmp_path / "kb")  # counting needs no model
    assert stats.exit_code == 0 and "1 ideas" in stats.output


def test_nader_pool_slice(tmp_path, compat_dir):
    """The first 120 ideas of NADER's pool import and are searchable (the full pool: kb_bench.py)."""
    pool = json.loads((compat_dir / "inspirations.json").read_text())
    assert len(pool) == 5411
    head = tmp_path / "head.json"
    head.write_text(json.dumps(pool[:120]))
    report = json.loads(invoke("kb", "import", head, "--kb", tmp_path / "kb", "--format", "json").stdout)
    assert report["read"] == 120 and report["added"] + report["merged"] == 120 and report["added"] > 110
    hits = json.loads(invoke("kb", "search", pool[57]["inspiration"], "--kb", tmp_path / "kb",
                             "-k", "1", "--format", "json").stdout)
    assert hits[0]["text"] == pool[57]["inspiration"] and hits[0]["score"] > 0.99


def test_help_imports_no_heavy_module():
    import subprocess
    import sys

    code = ("import sys\nfrom click.testing import CliRunner\nfrom nader.cli import main\n"
            "assert CliRunner().invoke(main, ['kb', '--help']).exit_code == 0\n"
            "print(sorted(m for m in ('numpy', 'torch', 'faiss', 'tokenizers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
