"""Parent-selection policies and strategies on hand-built trees (no training)."""
from __future__ import annotations

import random

import pytest

from nader.runtime.errors import ConfigError
from nader.search.selection import POLICIES
from nader.search.selection.nader import bfs_choice, dfs_choice, dfs_path, select_nader
from nader.search.selection.pareto import pareto_front, rank_and_crowding, select_pareto
from nader.search.selection.topk import select_top_k
from nader.search.strategies import STRATEGIES, get_strategy
from nader.search.strategies.rea import REAStrategy
from nader.search.tree import TreeNode, Tree


def node(i, parent, acc=None, status="ok", params=1000, flops=10000, depth=None):
    return TreeNode(arch_id=i, parent_id=parent, depth=depth if depth is not None else 0, status=status, text=f"t{i}",
                hash=f"h{i}", params=params, flops=flops, valid_acc=acc, finished=float(i))


def tree_of(spec):
    """spec: {id: (parent, acc)}; depths from the parents."""
    nodes, depth = [], {}
    for i, (parent, acc, *rest) in spec.items():
        depth[i] = 0 if parent is None else depth[parent] + 1
        status = rest[0] if rest else "ok"
        nodes.append(node(i, parent, acc, status=status, depth=depth[i]))
    return Tree(nodes)


# root 0 (50) -> 1 (60) -> 3 (70) -> 5 (65)
#             -> 2 (55)    -> 4 (40)
#                             6 (75, child of 2)
TREE = {0: (None, 50.0), 1: (0, 60.0), 2: (0, 55.0), 3: (1, 70.0), 4: (1, 40.0), 5: (3, 65.0), 6: (2, 75.0)}


def test_dfs_follows_the_best_child_while_accuracy_does_not_drop():
    t = tree_of(TREE)
    assert [n.arch_id for n in dfs_path(t)] == [0, 1, 3]  # 3's best child (65) is worse than 3 (70)
    assert dfs_choice(t, width=3).arch_id == 3


def test_dfs_skips_closed_nodes_and_bfs_takes_the_shallowest_open_level():
    t = tree_of(TREE)
    # width 1: every node with a trained child is closed: 0, 1, 2, 3 are closed
    assert dfs_choice(t, width=1) is None  # the whole path 0-1-3 is closed
    assert bfs_choice(t, width=1).arch_id == 6  # depth 2 holds open 4 (40) and 6 (75)
    assert bfs_choice(t, width=3).arch_id == 0  # the root is open with 2 children
    assert bfs_choice(t, width=2).arch_id == 2  # 0 and 1 are closed; 2 is the open node of level 1


def test_nader_mix_uses_dfs_or_bfs_by_the_coin():
    t = tree_of(TREE)
    always_dfs = [select_nader(t, random.Random(s), dfs=1.0).arch_id for s in range(5)]
    never_dfs = [select_nader(t, random.Random(s), dfs=0.0).arch_id for s in range(5)]
    assert set(always_dfs) == {3} and set(never_dfs) == {0}
    mixed = {select_nader(t, random.Random(s), dfs=0.5).arch_id for s in range(40)}
    assert mixed == {0, 3}
    assert select_nader(tree_of({0: (None, None, "training")}), random.Random(0)) is None


def test_rejected_children_do_not_close_a_node():
    spec = {0: (None, 50.0), 1: (0, None, "invalid"), 2: (0, None, "duplicate"), 3: (0, None, "over-budget")}
    assert bfs_choice(tree_of(spec), width=1).arch_id == 0


def test_top_k_chooses_among_the_k_best_only():
    t = tree_of(TREE)
    picks = {select_top_k(t, random.Random(s), k=2).arch_id for s in range(50)}
    assert picks == {6, 3}
    assert {select_top_k(t, random.Random(s), k=1).arch_id for s in range(10)} == {6}


def dominated(a, b):
    """b dominates a: at least as accurate and at most as large in params and FLOPs, better in one."""
    ge = b.valid_acc >= a.valid_acc and b.params <= a.params and b.flops <= a.flops
    return ge and (b.valid_acc > a.valid_acc or b.params < a.params or b.flops < a.flops)


def test_pareto_front_is_the_non_dominated_set():
    rng = random.Random(3)
    nodes = [node(i, None if i == 0 else 0, acc=rng.uniform(50, 90), params=rng.randint(1, 20) * 1000,
                  flops=rng.randint(1, 20) * 10000) for i in range(30)]
    t = Tree(nodes)
    front = {n.arch_id for n in pareto_front(t)}
    brute = {a.arch_id for a in nodes if not any(dominated(a, b) for b in nodes if b is not a)}
    assert front == brute and 0 < len(front) < 30
    rank, crowd = rank_and_crowding(t.scored())
    # every node of rank r+1 is dominated by some node of rank <= r
    for a, ra in zip(t.scored(), rank):
        if ra > 0:
            assert any(dominated(a, b) for b, rb in zip(t.scored(), rank) if rb < ra)


def test_pareto_tournament_prefers_lower_rank():
    t = Tree([node(0, None, 80.0, params=1000, flops=1000), node(1, 0, 70.0, params=2000, flops=2000)])
    assert {select_pareto(t, random.Random(s)).arch_id for s in range(10)} == {0}


def test_every_policy_ignores_untrained_nodes_and_test_accuracy_is_not_visible():
    t = tree_of({0: (None, 50.0), 1: (0, None, "failed"), 2: (0, None, "training"), 3: (0, 30.0, "diverged")})
    for name, policy in POLICIES.items():
        picks = {policy(t, random.Random(s)).arch_id for s in range(20)}
        assert picks == ({0, 1, 2, 3} if name == "uniform" else {0}), name
    assert not hasattr(t[0], "test_acc")


def test_rea_mutates_the_best_of_a_sample_and_removes_the_oldest():
    rea = REAStrategy(population=3, sample_size=3)
    t = tree_of({0: (None, 90.0), 1: (0, 10.0), 2: (0, 20.0), 3: (0, 30.0)})
    assert rea.ask(t, random.Random(0)) is not None  # not full yet: a uniform valid node
    for i in range(4):
        rea.tell(t[i], random.Random(i))
    # the population is the last 3 (1, 2, 3): the oldest (0, also the best) is gone
    assert [n.arch_id for n in rea.population] == [1, 2, 3]
    assert {rea.ask(t, random.Random(s)).arch_id for s in range(10)} == {3}
    small = REAStrategy(population=3, sample_size=1)
    for i in range(4):
        small.tell(t[i], random.Random(i))
    assert {small.ask(t, random.Random(s)).arch_id for s in range(40)} == {1, 2, 3}


def test_rea_population_takes_trained_architectures_only():
    rea = REAStrategy(population=2, sample_size=2)
    t = tree_of({0: (None, 50.0), 1: (0, None, "failed"), 2: (0, None, "diverged")})
    for n in t:
        rea.tell(n, random.Random(n.arch_id))
    assert [n.arch_id for n in rea.population] == [0, 2]
    assert rea.ask(t, random.Random(0)).arch_id == 0  # diverged (no accuracy) ranks last


def test_strategy_options_are_checked_and_defaulted():
    assert get_strategy("rea").resolve_options({}) == {"population": 20, "sample_size": 5}
    assert get_strategy("rea").resolve_options({"sample-size": "3"}) == {"population": 20, "sample_size": 3}
    with pytest.raises(ConfigError, match="must be at least 1"):
        get_strategy("rea").resolve_options({"population": 0})
    with pytest.raises(ConfigError, match="choose one of nader, top-k, pareto, uniform"):
        get_strategy("tree").resolve_options({"selection": "best"})
    with pytest.raises(ConfigError, match="unknown strategy"):
        get_strategy("bayes")
    assert set(STRATEGIES) >= {"random", "walk", "local", "rea", "tree"}


def test_walk_and_tree_strategies_pick_valid_parents():
    t = tree_of({0: (None, 50.0), 1: (0, None, "invalid"), 2: (0, 60.0), 3: (2, None, "training")})
    walk = get_strategy("walk")()
    assert {walk.ask(t, random.Random(s)).arch_id for s in range(40)} == {0, 2, 3}
    for policy in ("nader", "top-k", "pareto"):
        tree_strategy = get_strategy("tree")(selection=policy, k=1)
        assert tree_strategy.ask(t, random.Random(0)).arch_id in (0, 2)


def test_the_docs_strategy_table_lists_every_strategy():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "search.md").read_text(encoding="utf-8")
    section = doc.split("## Strategies (`search/strategies/`", 1)[1].split("\n\n", 2)[1]
    from nader.search.auto import AUTO

    assert set(re.findall(r"^\| `([a-z]+)`", section, re.M)) == set(STRATEGIES) | {AUTO}
