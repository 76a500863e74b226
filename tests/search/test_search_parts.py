"""The search's parts on their own: checks, the tree store, the lock (the proxies: test_proxies.py)."""
from __future__ import annotations

import json
import math
import sqlite3

import pytest
import torch
from torch import nn

from nader.compiler.fit import Budget
from nader.compiler.network import analyze
from nader.search.checks import Checker, arch_hash_of_text
from nader.search.config import merge
from nader.runtime.lock import RunLock, RunLocked
from nader.search.store import RunReader, SearchStore
from nader.search.tree import TreeNode, Tree

from search_helpers import ROOT_TEXT

DEPTHS = [1, 1, 1]


@pytest.fixture
def checker():
    return Checker("nb201", "digits", DEPTHS, merge({"root_text": ROOT_TEXT}).budget())


def renumbered(text: str) -> str:
    """The same architecture written differently: node ids shifted, edge lines reversed."""
    out, block = [], []
    for line in text.splitlines() + ["##end##"]:
        if line.startswith("##"):
            nodes = [ln for ln in block if ":" in ln and "->" not in ln]
            edges = [ln for ln in block if "->" in ln]
            out += nodes + edges[::-1]
            block = []
            if line != "##end##":
                out.append(line)
        elif line.strip() and not line.startswith("#"):
            block.append(line.split("#")[0].strip())
    shift = {str(i): str(i + 10) for i in range(2, 10)}

    def fix(line):
        if "->" in line:
            a, b = line.split("->")
            return ",".join(shift.get(x, x) for x in a.split(",")) + "->" + shift.get(b, b)
        if ":" in line and not line.startswith("##"):
            i, rest = line.split(":", 1)
            return shift.get(i, i) + ":" + rest
        return line
    return "\n".join(fix(ln) for ln in out) + "\n"


def test_valid_architecture_is_fitted_like_build_network(checker):
    c = checker.check(ROOT_TEXT, Tree())
    assert c.ok and c.status == "proposed" and len(c.hash) == 64
    info = analyze(ROOT_TEXT, "nb201", "digits", depths=DEPTHS, budget=checker.budget)
    assert (c.widths, c.params, c.flops, c.binding) == (info["widths"], info["params"], info["flops"], info["binding"])


def test_duplicates_are_found_whatever_the_numbering(checker):
    tree = Tree([TreeNode(arch_id=0, parent_id=None, depth=0, status="ok", text=ROOT_TEXT,
                      hash=checker.check(ROOT_TEXT, Tree()).hash)])
    other = renumbered(ROOT_TEXT)
    assert other != ROOT_TEXT
    c = checker.check(other, tree)
    assert (c.status, c.duplicate_of) == ("duplicate", 0)
    changed = ROOT_TEXT.replace("8:ReLU", "8:GELU")
    assert checker.check(changed, tree).status == "proposed"
    stem_changed = ROOT_TEXT.replace("out_channels=dim,kernel_size=3,stride=1)\n3:BN\n0->2",
                                     "out_channels=dim,kernel_size=5,stride=1)\n3:BN\n0->2", 1)
    assert stem_changed != ROOT_TEXT
    assert arch_hash_of_text(stem_changed, "nb201") != arch_hash_of_text(ROOT_TEXT, "nb201")


def test_invalid_and_over_budget(checker):
    c = checker.check(ROOT_TEXT.replace("5:Conv2d(", "5:Conv3d("), Tree())
    assert c.status == "invalid" and c.diagnostics["diagnostics"][0]["code"] == "NAD104"
    assert checker.check(None, Tree(), "no block in the reply").diagnostics["message"] == "no block in the reply"
    tiny = Checker("nb201", "digits", DEPTHS, Budget(params=500))
    c = tiny.check(ROOT_TEXT, Tree())
    assert c.status == "over-budget" and "no width fits the budget" in c.diagnostics["message"]


def test_config_budget_defaults_to_nader_presets():
    cfg = merge({"root_text": ROOT_TEXT, "dataset": "cifar10"})
    assert (cfg.budget().params, cfg.budget().flops) == (1_500_000, 200_000_000)
    cfg = merge({"root_text": ROOT_TEXT, "dataset": "imagenet16-120"})
    assert (cfg.budget().params, cfg.budget().flops) == (1_500_000, 50_000_000)
    cfg = merge({"root_text": ROOT_TEXT, "dataset": "cifar100", "max_params": 1000})
    assert (cfg.budget().params, cfg.budget().flops) == (1000, 200_000_000)


def test_cifar10_valid_is_cifar10_for_the_budget_and_trains_as_named():
    from nader.search.evaluator import SEARCH_TRAINING_SETS

    cfg = merge({"root_text": ROOT_TEXT, "dataset": "cifar10-valid"})
    cfg.check()
    assert (cfg.budget().params, cfg.budget().flops) == (1_500_000, 200_000_000)
    assert SEARCH_TRAINING_SETS.get("cifar10-valid", "cifar10-valid") == "cifar10-valid"
    assert SEARCH_TRAINING_SETS["cifar10"] == "cifar10-valid"


# ---------------------------------------------------------------------- store


def record(i, parent=None, status="training"):
    return {"arch_id": i, "parent_id": parent, "depth": 0 if parent is None else 1, "status": status,
            "text": "t", "origin": "root" if parent is None else "mutation", "widths": [8, 16, 32]}


def test_insert_is_all_or_nothing(tmp_path):
    store = SearchStore(tmp_path)
    store.insert([record(0)])
    with pytest.raises(sqlite3.IntegrityError):
        store.insert([record(1, 0), record(0)])  # the second row's id exists
    assert [n.arch_id for n in store.nodes()] == [0]
    store.close()


@pytest.mark.parametrize("seeds, status, valid", [
    ([("ok", 80.0), ("ok", 90.0)], "ok", 85.0),
    ([("ok", 80.0), ("failed", None)], "ok", 80.0),
    ([("diverged", 10.0), ("failed", None)], "diverged", None),
    ([("failed", None), ("failed", None)], "failed", None),
])
def test_seed_results_aggregate_when_the_last_arrives(tmp_path, seeds, status, valid):
    store = SearchStore(tmp_path)
    store.insert([record(0)])
    (s1, v1), (s2, v2) = seeds
    assert store.record_seed(0, 1, status=s1, valid_acc=v1, test_acc=v1, seconds=2.0, seeds_total=2) is None
    assert store.node(0).status == "training" and store.node(0).seeds_done == 1
    node = store.record_seed(0, 2, status=s2, valid_acc=v2, test_acc=v2, seconds=3.0, seeds_total=2,
                             error=None if s2 == "ok" else "boom", error_kind=None if s2 == "ok" else "exception")
    assert node.status == status and node.valid_acc == valid
    row = store.conn.execute("SELECT seconds, diagnostics, valid_std FROM archs").fetchone()
    assert row[0] == 5.0
    if status == "ok" and valid == 85.0:
        assert row[2] == pytest.approx(math.sqrt(50.0)) and row[1] is None
    if s2 != "ok":
        assert json.loads(row[1])[-1] == {"seed": 2, "status": s2, "error": "boom", "error_kind": "exception"}
    store.close()


def test_usage_adds_up_and_read_only_access(tmp_path):
    store = SearchStore(tmp_path)
    store.insert([record(0), {**record(1, 0), "tokens_in": 100, "tokens_out": 20, "cost_usd": 0.5}])
    store.add_usage(1, 10, 5, 0.25)
    assert store.spent() == (135, 0.75)
    # the LLM client's ledger counts when it holds more (calls that produced no architecture)
    from nader.agents.llm.record import CallStore

    calls = CallStore(tmp_path)
    request = {"kind": "chat", "model": "m", "messages": [], "params": {}}
    for i, source in enumerate(("endpoint", "endpoint", "cache")):
        calls.put(key=f"k{i}", occurrence=0, request=request, role="proposer", arch_id=None, prompt=None,
                  reply=None, status="ok", source=source, prompt_tokens=100, completion_tokens=50, cost_usd=0.5)
    calls.close()
    assert store.spent() == (300, 1.0)
    store.close()
    reader = RunReader(tmp_path)
    with pytest.raises(sqlite3.OperationalError):
        reader.conn.execute("DELETE FROM archs")
    reader.close()
    (tmp_path / "plain").mkdir()
    with pytest.raises(FileNotFoundError, match="not a search run directory"):
        RunReader(tmp_path / "plain")


def test_lock_is_exclusive_and_released(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunLocked, match="in use by another nader-search process"):
            RunLock(tmp_path).acquire()
    RunLock(tmp_path).acquire().release()


def test_a_dead_node_does_not_make_a_new_architecture(checker):
    from nader.search.tree import Tree

    with_dead = ROOT_TEXT.replace("0->2\n", "0->2\n0->99\n", 1).replace("2:", "99:ReLU\n2:", 1)
    assert with_dead != ROOT_TEXT
    assert arch_hash_of_text(with_dead, "nb201") == arch_hash_of_text(ROOT_TEXT, "nb201")
    a, b = checker.load(ROOT_TEXT), checker.load(with_dead)
    assert any(d.code.code == "NAD206" for d in b.warnings)
    from nader.search.checks import same_architecture

    assert same_architecture(a, b)
    live = ROOT_TEXT.replace("8->1\n", "8->99\n99->1\n", 1).replace("2:", "99:ReLU\n2:", 1)  # the same node, used
    assert arch_hash_of_text(live, "nb201") not in (None, arch_hash_of_text(ROOT_TEXT, "nb201"))


def test_the_root_is_named_without_a_parent():
    from nader.search.records import lineage

    assert lineage({"parent_id": None, "origin": "root", "status": "ok", "operator": None}) == "root"
    child = {"parent_id": 3, "origin": "mutation", "status": "ok", "operator": "insert-se"}
    assert lineage(child) == "parent #3, insert-se"
