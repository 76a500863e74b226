"""`nader-search report` on a real (small) search: the CLI, the loader and the page in Chromium."""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nader.cli import main as cli
from nader.search import run_search
from nader.search.report.load import load_run
from search_helpers import settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser import Browser, find_chromium  # noqa: E402


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("search") / "run"
    run_search(settings(run, trials=4, strategy="rea"))
    return run


def test_loader_reads_every_architecture_of_the_tree(small_run):
    run, archs = load_run(small_run)
    conn = sqlite3.connect(small_run / "runs.sqlite")
    rows = conn.execute("SELECT arch_id, parent_id, status, valid_acc FROM archs ORDER BY arch_id").fetchall()
    conn.close()
    assert [(int(a.id), None if a.parent is None else int(a.parent), a.status, a.valid_acc) for a in archs] == rows
    assert run.dataset == "digits" and run.strategy == "rea"
    assert all(a.text for a in archs if a.status == "ok")


def test_report_command_writes_the_page(small_run, tmp_path):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["report", str(small_run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert str(out) in result.output
    html = out.read_text(encoding="utf-8")
    assert "Modification tree" in html and "<svg" in html


def test_report_of_a_directory_without_a_search_is_a_clean_error(tmp_path):
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "is not a search run directory" in result.output and "Traceback" not in result.output


@pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed")
def test_report_of_a_real_search_in_the_browser(small_run, tmp_path):
    out = tmp_path / "r.html"
    assert CliRunner().invoke(cli, ["report", str(small_run), "-o", str(out)]).exit_code == 0
    _, archs = load_run(small_run)
    with Browser() as browser:
        browser.open(out.as_uri())
        assert browser.problems() == []
        assert browser.eval("document.querySelectorAll('#tree .tree-node').length") == len(archs)
        ok = [a for a in archs if a.status == "ok"]
        assert browser.eval("document.querySelectorAll('#plot-trials circle').length") == len(ok)


def test_a_stem_is_drawn_at_the_stride_it_has():
    # An ImageNet-style search's stem downscales by 4: drawn at stride 1 it would show an error.
    import base64

    from nader.search.report.render import _drawings

    text = ("##B##\n0:input\n1:output\n2:ReLU\n0->2\n2->1\n"
            "##B_stem##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=4,stride=4)\n0->2\n2->1\n")
    base, stem = (base64.b64decode(url.split(",", 1)[1]).decode("utf-8") for url in _drawings(text))
    assert "(B,dim,ceil(H/4),ceil(H/4))" in stem and "NAD311" not in stem
    assert "NAD3" not in base


def test_the_llm_clients_findings_are_in_the_report_escaped_and_bounded(small_run, tmp_path):
    import json
    import shutil

    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    merge = {"gemma-3-270m": {"prompt_tokens": 12, "call_id": 3,
                              "message": "the server dropped the system message; switching to system=merge"}}
    names = {"gemma-3-270mm": {"found": "not-listed", "message": "model 'gemma-3-270mm' <b>is not</b> listed"},
             "long": {"message": "x" * 5000}, "odd": "not an object"}
    conn = sqlite3.connect(run / "runs.sqlite")
    with conn:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('system_merge', ?)", (json.dumps(merge),))
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('model_name', ?)", (json.dumps(names),))
    conn.close()
    loaded, _ = load_run(run)
    assert loaded.llm_notes[0].startswith("the server dropped the system message")
    assert "model 'gemma-3-270mm' <b>is not</b> listed" in loaded.llm_notes and len(loaded.llm_notes) == 3
    assert max(map(len, loaded.llm_notes)) == 500
    out = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["report", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert "What the LLM client noticed" in html and "&lt;b&gt;is not&lt;/b&gt;" in html and "<b>is not</b>" not in html


def test_a_damaged_finding_is_a_problem_not_a_failure(small_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    conn = sqlite3.connect(run / "runs.sqlite")
    with conn:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('model_name', '{not json')")
    conn.close()
    problems = []
    loaded, archs = load_run(run, problems)
    assert loaded.llm_notes == [] and archs and any("meta" in str(p) for p in problems)
    result = CliRunner().invoke(cli, ["report", str(run), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert "What the LLM client noticed" not in (tmp_path / "r.html").read_text(encoding="utf-8")
