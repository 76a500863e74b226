"""`--max-invalid N`: a strategy that produces no valid architecture N times in a row stops the
search (code `invalid`) instead of spending calls for hours; a valid proposal resets the count;
the count is read from the tree, so a resume counts the invalid ones its last session ended with;
the limit is a stop condition, not part of the run's identity (TOML key and flag alike)."""
from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from nader.cli import main
from nader.search import run_search
from nader.search.strategies import STRATEGIES

from search_helpers import EXAMPLE, ROOT_TEXT, ScriptedStrategy, script, settings

GELU = ROOT_TEXT.replace("8:ReLU", "8:GELU")
MUL = ROOT_TEXT.replace("7:Add", "7:Mul")


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setitem(STRATEGIES, "scripted", ScriptedStrategy)


def statuses(run) -> list:
    conn = sqlite3.connect(run / "runs.sqlite")
    try:
        return [s for (s,) in conn.execute("SELECT status FROM archs ORDER BY arch_id")]
    finally:
        conn.close()


def test_a_strategy_that_only_proposes_invalid_text_stops_after_n(tmp_path, scripted):
    run = tmp_path / "run"
    broken = ROOT_TEXT.replace("7:Add", "7:NoSuchOp")  # does not verify
    texts = [None, broken, None, broken, None, broken]  # no text, then a text that fails the checks
    cfg = settings(run, strategy="scripted", trials=10, max_invalid=3,
                   strategy_options={"script": script(tmp_path, texts)})
    summary = run_search(cfg)
    assert summary.stop.code == "invalid"
    assert summary.stop.message.startswith("the last 3 proposals were all invalid")
    assert "--max-invalid" in summary.stop.message
    assert statuses(run) == ["ok", "invalid", "invalid", "invalid"]


def test_valid_proposals_reset_the_count(tmp_path, scripted):
    run = tmp_path / "run"
    texts = [None, None, GELU, None, None, MUL, None, None]  # never 3 invalid in a row
    cfg = settings(run, strategy="scripted", trials=10, max_invalid=3,
                   strategy_options={"script": script(tmp_path, texts)})
    summary = run_search(cfg)
    assert summary.stop.code == "stalled"  # the script ran out, not the invalid stop
    assert statuses(run) == ["ok", "invalid", "invalid", "ok", "invalid", "invalid", "ok", "invalid", "invalid"]


def test_duplicates_and_over_budget_ones_are_not_invalid(tmp_path, scripted):
    """Rejects of other kinds break the run of invalid ones: they are valid architectures."""
    run = tmp_path / "run"
    texts = [None, None, ROOT_TEXT, None, None]  # the root again: a duplicate
    cfg = settings(run, strategy="scripted", trials=10, max_invalid=3,
                   strategy_options={"script": script(tmp_path, texts)})
    assert run_search(cfg).stop.code == "stalled"
    assert statuses(run) == ["ok", "invalid", "invalid", "duplicate", "invalid", "invalid"]


def test_a_resume_counts_the_invalid_proposals_the_last_session_ended_with(tmp_path, scripted):
    run = tmp_path / "run"
    cfg = settings(run, strategy="scripted", trials=10, max_invalid=2,
                   strategy_options={"script": script(tmp_path, [None] * 10)})
    assert run_search(cfg).stop.code == "invalid"
    assert statuses(run).count("invalid") == 2
    again = run_search(cfg)  # the same limit: the tree already ends with 2 invalid ones
    assert again.resumed and again.stop.code == "invalid"
    assert statuses(run).count("invalid") == 2
    more = run_search({**cfg, "max_invalid": 4})  # not the run's identity: a resume may raise it
    assert more.stop.code == "invalid" and more.stop.message.startswith("the last 4 proposals")
    assert statuses(run).count("invalid") == 4  # 2 more, not 4 more


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_the_flag_overrides_the_toml_key_and_bad_values_are_usage_errors(tmp_path, scripted):
    (tmp_path / "arch.nad").write_text(EXAMPLE.read_text())
    toml = tmp_path / "search.toml"
    texts = json.dumps(script(tmp_path, [None] * 8))
    toml.write_text(f'from = "arch.nad"\nstrategy = "scripted"\nmax-invalid = 5\ndepths = [1, 1, 1]\nepochs = 1\n'
                    f'run-dir = "out"\nthreads = 1\n[strategy-options]\nscript = {texts}\n'
                    f'[train]\ntrain_limit = 256\neval_limit = 128\n')
    r = invoke("run", toml, "--max-invalid", "2", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["stop_reason"] == "invalid"
    assert statuses(tmp_path / "out").count("invalid") == 2
    r = invoke("run", toml, "--max-invalid", "0")
    assert r.exit_code == 2 and "--max-invalid" in r.stderr and "Traceback" not in r.output
    toml.write_text(toml.read_text().replace("max-invalid = 5", "max-invalid = 0"))
    r = invoke("run", toml)
    assert r.exit_code == 2 and "max-invalid: 0 is below the least allowed, 1" in r.stderr
