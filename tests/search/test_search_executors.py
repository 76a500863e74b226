"""The same search on every executor: the same tree, up to the order trials finish in.

`walk` proposes without looking at results, so with two workers finishing in any order the
proposals, the tree and (one torch thread per trial) every number are the same as in process.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from nader.search import run_search
from nader.search.strategies import STRATEGIES

from search_helpers import FAULTY, ROOT_TEXT, ScriptedStrategy, script, settings, tree_rows, with_fault

TRIALS = 4


@pytest.fixture(scope="module")
def local_tree(tmp_path_factory):
    run = tmp_path_factory.mktemp("local") / "run"
    run_search(settings(run, trials=TRIALS))
    return tree_rows(run)


def finishing_order(run) -> list:
    conn = sqlite3.connect(run / "runs.sqlite")
    order = [a for a, in conn.execute("SELECT arch_id FROM archs WHERE finished IS NOT NULL ORDER BY finished")]
    conn.close()
    return order


def test_pool_gives_the_local_tree(tmp_path, local_tree):
    run = tmp_path / "run"
    summary = run_search(settings(run, trials=TRIALS, executor="pool", workers=2))
    assert summary.trials == TRIALS
    assert tree_rows(run) == local_tree
    assert sorted(finishing_order(run)) == sorted(r[0] for r in local_tree if r[2] == "ok")


def test_ray_gives_the_local_tree(tmp_path, local_tree):
    pytest.importorskip("ray")
    run = tmp_path / "run"
    run_search(settings(run, trials=TRIALS, executor="ray", workers=2))
    assert tree_rows(run) == local_tree


def test_a_killed_worker_is_a_record_and_is_retried_on_resume(tmp_path, monkeypatch):
    monkeypatch.setitem(STRATEGIES, "scripted", ScriptedStrategy)
    run = tmp_path / "run"
    marker = tmp_path / "killed-once"
    texts = [with_fault(ROOT_TEXT.replace("8:ReLU", "8:GELU"), "kill", str(marker)),
             ROOT_TEXT.replace("7:Add", "7:Mul")]
    cfg = settings(run, strategy="scripted", trials=10, builder=FAULTY, executor="pool", workers=1, epochs=2,
                   strategy_options={"script": script(tmp_path, texts)})
    summary = run_search(cfg)
    assert summary.stop.code == "stalled"
    conn = sqlite3.connect(run / "runs.sqlite")
    rows = dict(conn.execute("SELECT arch_id, status FROM archs").fetchall())
    assert rows == {0: "ok", 1: "failed", 2: "ok"}  # the loop went on after the crash
    (diag,) = conn.execute("SELECT diagnostics FROM archs WHERE arch_id=1").fetchone()
    assert json.loads(diag)[0]["error_kind"] == "killed" and "SIGKILL" in json.loads(diag)[0]["error"]
    conn.close()

    again = run_search(cfg)
    conn = sqlite3.connect(run / "runs.sqlite")
    assert conn.execute("SELECT status, attempts FROM archs WHERE arch_id=1").fetchone() == ("ok", 2)
    assert again.counts == {"ok": 3}
    # a third run does not retry anything: every architecture is final
    assert run_search(cfg).trials == 3
