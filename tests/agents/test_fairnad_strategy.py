"""`--strategy fairnad` (FairNAD's stages on our language): the schedule, fair idea sampling, the
feedback loop on the compiler (repair cap, structure check) and a whole search against the
loopback server that is interrupted and resumed.

The "LLM" is scripted (tests/agents/scripted.py): the Modifier answers with a graph-rewrite
mutation of the parent's block. Training is real: the search's small digits setting."""
from __future__ import annotations

import json
import random
import re
import sqlite3
from collections import Counter

import pytest

from knowledge_helpers import HashingEmbedder
from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.fairnad import fair_idea, structure_problem
from nader.agents.knowledge import ATTRIBUTE_TREE, Idea, KnowledgeBase
from nader.search.loop import Observer
from nader.search.session import run_search
from nader.search.strategies import STRATEGIES
from nader.search.strategies.base import SearchContext
from nader.search.strategies.fairnad import FairNADStrategy, schedule
from nader.search.tree import TreeNode, Tree
from scripted import ScriptedLLM, fenced
from search_helpers import ROOT_TEXT, settings

# Six main categories, very unequal in size: a draw uniform over ideas would pick the first
# category 40 times in 50; fair sampling picks each category one time in six.
GROUPS = {("operation level", "activation"): 40, ("operation level", "normalization"): 4,
          ("block and connectivity level", "adaptive feature recalibration"): 2,
          ("block and connectivity level", "residual connections and multi-branch architectures"): 2,
          ("network level", "network structural patterns"): 1, ("operation level", "efficient convolution"): 1}


def _ideas():
    out = []
    for (granularity, main), n in GROUPS.items():
        assert main in ATTRIBUTE_TREE[granularity]
        out += [Idea(f"{main} idea number {i}", "p", granularity, main) for i in range(n)]
    return out


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    with KnowledgeBase.open(path, embedder=HashingEmbedder()) as kb:
        kb.add_ideas(_ideas(), threshold=1.01)  # keep near-duplicates: each is its own idea
    return path


def _options(server, kb_dir, **extra):
    return {"kb": str(kb_dir), "llm_base_url": server.base_url, "llm_model": "local-model", **extra}


# ---------------------------------------------------------------------- the schedule
def test_the_default_schedule_is_8_fair_8_pareto_4_iterative_in_chains_of_2():
    s = FairNADStrategy.resolve_options({})
    assert (s["fair"], s["pareto"], s["iterative"], s["steps"], s["repairs"]) == (8, 8, 4, 2, 2)
    slots = [schedule(p, 8, 8, 4, 2) for p in range(40)]
    for rnd in (1, 2):
        stages = Counter(x.stage for x in slots if x.round == rnd)
        assert stages == {"I": 8, "II": 8, "III": 4}
    third = [(x.chain, x.step) for x in slots if x.round == 1 and x.stage == "III"]
    assert third == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [x.stage for x in slots[:20]] == ["I"] * 8 + ["II"] * 8 + ["III"] * 4
    assert slots[20].round == 2 and slots[20].stage == "I" and slots[20].index == 0


def test_pareto_stage_scales_up_under_90_percent_of_a_budget_and_tunes_otherwise():
    from nader.compiler.fit import Budget

    strategy = FairNADStrategy()
    strategy.context = SearchContext(budget=Budget(params=100_000, flops=10_000_000))
    node = lambda params, flops: TreeNode(1, 0, 1, "ok", params=params, flops=flops, valid_acc=1.0)  # noqa: E731
    assert strategy.under_budget(node(50_000, 9_500_000))  # parameters under 0.9 of theirs
    assert strategy.under_budget(node(95_000, 8_000_000))  # FLOPs under 0.9 of theirs
    assert not strategy.under_budget(node(91_000, 9_100_000))  # near both limits: tune


def test_the_plan_prompt_is_a_documented_template_with_each_stage():
    from nader.agents.prompts import prompt_doc, prompt_names, render

    assert "fairnad_plan.v1" in prompt_names()
    doc = prompt_doc("fairnad_plan.v1")
    assert doc.startswith("fairnad_plan.v1") and "Inputs:" in doc and "Output:" in doc
    common = dict(idea="use GELU", granularity="operation level", tree=ATTRIBUTE_TREE, previous="x", diff="d",
                  improved=True, parent_acc=2.0, grandparent_acc=1.0)
    text = {stage: {render("fairnad_plan.v1", stage=stage, pick=p, **common)[-1]["content"] for p in (0.0, 0.3, 0.6, 0.9)}
            for stage in ("fair", "upscale", "tune")}
    assert len(text["upscale"]) == 4 and len(text["tune"]) == 4 and len(text["fair"]) == 2
    assert all("use GELU" in t for t in text["fair"])
    assert "kernel size" in " ".join(text["tune"]) and "deeper" in " ".join(text["upscale"])


# ---------------------------------------------------------------------- fair sampling
def _chi_square(counts: Counter, groups) -> float:
    n = sum(counts.values())
    expected = n / len(groups)
    return sum((counts.get(g, 0) - expected) ** 2 / expected for g in groups)


def test_fair_sampling_is_uniform_over_main_categories(kb_dir):
    mains = [main for _, main in GROUPS]
    with KnowledgeBase.open(kb_dir, embedder=HashingEmbedder()) as kb:
        rng = random.Random(1234)
        fair = Counter(fair_idea(kb, rng).main_category for _ in range(3000))
        rng = random.Random(1234)
        flat = Counter(kb.sample(rng, by=None).main_category for _ in range(3000))
    # 5 degrees of freedom: 20.52 is the 0.1% critical value of the chi-square distribution.
    assert set(fair) == set(mains) and _chi_square(fair, mains) < 20.52
    # The same test rejects a draw that is uniform over ideas rather than categories.
    assert _chi_square(flat, mains) > 20.52


# ---------------------------------------------------------------------- the feedback loop
def _base_block(text: str) -> str:
    from nader.compiler.block_text import split_architecture

    return split_architecture(text)[0]


def _strategy(server, kb_dir, tmp_path, **options):
    strategy = FairNADStrategy(**_options(server, kb_dir, **options))
    strategy.bind(SearchContext(run_dir=tmp_path))
    tree = Tree([TreeNode(0, None, 0, "ok", text=ROOT_TEXT, valid_acc=50.0, params=10_000, flops=10**6)])
    return strategy, tree


def test_execution_feedback_makes_at_most_two_repairs(server, kb_dir, tmp_path):
    broken = _base_block(ROOT_TEXT).rstrip() + "\n99:Frobnicate\n2->99\n"
    server.responder = lambda body: reply(fenced(broken))
    strategy, tree = _strategy(server, kb_dir, tmp_path)
    try:
        parent = strategy.ask(tree, random.Random(0))
        candidate = strategy.propose(parent, random.Random(0))
    finally:
        strategy.close()
    assert candidate.text is None and "did not verify after 3 rounds" in candidate.error
    assert candidate.change["rounds"] == 3 and candidate.change["repairs"] == 2
    assert candidate.change["feedback"] == "execution"
    assert len(server.chat_requests) == 3  # the first reply and two repairs, no more
    repairs = [b["messages"][-1]["content"] for b in server.chat_requests[1:]]
    assert all("The compiler rejected your block" in r for r in repairs)


def test_structure_check_rejects_an_unchanged_block(server, kb_dir, tmp_path):
    # The parent's block with its nodes renumbered and its edges reordered: it verifies, but its
    # canonical diff is empty.
    base = _base_block(ROOT_TEXT)
    header, *lines = [x.split("#")[0].strip() if not x.startswith("##") else x
                      for x in base.strip().splitlines() if x.startswith("##") or not x.startswith("#")]
    renumber = lambda m: str(int(m.group(1)) + 10) if int(m.group(1)) >= 2 else m.group(1)  # noqa: E731
    lines = [re.sub(r"(?:^|(?<=[>,]))(\d+)(?=[:,-]|$)", renumber, line) for line in lines]
    nodes, edges = [x for x in lines if ":" in x], [x for x in lines if "->" in x]
    renumbered = "\n".join([header, *nodes, *reversed(edges)])
    assert renumbered != base and "12:Conv2d" in renumbered
    server.responder = lambda body: reply(fenced(renumbered))
    strategy, tree = _strategy(server, kb_dir, tmp_path)
    try:
        candidate = strategy.propose(strategy.ask(tree, random.Random(0)), random.Random(0))
    finally:
        strategy.close()
    assert candidate.text is None and candidate.error.startswith("structure: the canonical diff")
    assert candidate.change["feedback"] == "structure" and candidate.change["rounds"] == 1
    assert len(server.chat_requests) == 1  # discarded, not sent back for repair


def test_structure_check_requires_a_weighted_layer_in_the_base_block():
    from nader.compiler.block_text import split_architecture

    _, stem, down = split_architecture(ROOT_TEXT)
    pooled = ("##ResNetBasic##\n0:input\n1:output\n2:AvgPool2d(kernel_size=3,stride=1)\n3:ReLU\n"
              "0->2\n2->3\n3->1\n" + stem + down)
    problem = structure_problem(ROOT_TEXT, pooled, "nb201", [1, 1, 1])
    assert problem is not None and "no weighted layer" in problem
    # One weighted layer per block, repeated by three stages: multi-layer.
    conv = pooled.replace("2:AvgPool2d(kernel_size=3,stride=1)", "2:Conv2d(out_channels=C,kernel_size=3,stride=1)")
    assert structure_problem(ROOT_TEXT, conv, "nb201", [1, 1, 1]) is None
    # ... but a single base block in all is a single layer.
    assert "at least 2" in structure_problem(ROOT_TEXT, conv, "nb201", [1])


# ---------------------------------------------------------------------- a whole search
class StopAfter(Observer):
    """Ctrl-C once `count` architectures after the root have finished training."""

    def __init__(self, count):
        self.count, self.seen = count, 0

    def finished(self, node):
        self.seen += node.arch_id > 0
        if self.seen == self.count:
            raise KeyboardInterrupt


SMALL = {"fair": 2, "pareto": 2, "iterative": 2, "steps": 2}


def test_fairnad_search_follows_the_schedule_and_resumes(server, tmp_path, kb_dir):
    assert STRATEGIES["fairnad"] is FairNADStrategy
    server.responder = ScriptedLLM(mutate=True, broken_every=4)
    run = tmp_path / "run"
    cfg = settings(run, strategy="fairnad", trials=13, strategy_options=_options(server, kb_dir, **SMALL))
    with pytest.raises(KeyboardInterrupt):  # stopped in round 1, stage II
        run_search(cfg, observer=StopAfter(3))
    conn = sqlite3.connect(run / "runs.sqlite")
    before = conn.execute("SELECT arch_id, text, change FROM archs ORDER BY arch_id").fetchall()
    conn.close()

    summary = run_search(cfg)
    assert summary.resumed and summary.stop.code == "trials" and summary.trials == 13
    conn = sqlite3.connect(run / "runs.sqlite")
    rows = conn.execute("SELECT arch_id, parent_id, status, change, attempts FROM archs WHERE arch_id > 0 "
                        "ORDER BY arch_id").fetchall()
    after = conn.execute("SELECT arch_id, text, change FROM archs ORDER BY arch_id").fetchall()
    results = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    conn.close()
    assert after[:len(before)] == before  # nothing proposed before the interruption was redone
    trained = [(a, p, s, json.loads(c), n) for a, p, s, c, n in rows if s in ("ok", "diverged", "failed")]
    assert len(trained) == 12 and all(n == 1 for *_, n in trained)
    assert results == 13  # one training per architecture (one seed), the root included
    # Two whole rounds, each 2 + 2 + 2, in schedule order.
    per_round = Counter((c["round"], c["stage"]) for _, _, _, c, _ in trained)
    assert per_round == {(1, "I"): 2, (1, "II"): 2, (1, "III"): 2, (2, "I"): 2, (2, "II"): 2, (2, "III"): 2}
    assert [c["stage"] for _, _, _, c, _ in trained] == ["I", "I", "II", "II", "III", "III"] * 2
    by_id = {a: (p, s, c) for a, p, s, c, _ in trained}
    for arch_id, (parent, status, change) in by_id.items():
        assert change["plan"] and change["rounds"] >= 1 and change["repairs"] <= 2
        if change["stage"] == "I" or (change["stage"] == "III" and "idea" in change):
            assert change["main_category"] in {m for _, m in GROUPS}
        if change["stage"] == "II":
            assert change["refinement"] in ("upscale", "tune")
        if change["stage"] == "III" and change["step"] == 1:
            # The second edit continues from the first edit's child (when that one trained).
            first = next(a for a, (_, _, c) in by_id.items() if c["stage"] == "III" and c["round"] == change["round"]
                         and c["chain"] == change["chain"] and c["step"] == 0)
            expected = first if by_id[first][1] == "ok" else by_id[first][0]
            assert parent == expected
            if expected == first:
                assert change["iterated_from"] == first and "validation accuracy from" in change["plan"]
    # Running the finished search again asks the LLM nothing and trains nothing.
    calls = len(server.chat_requests)
    again = run_search(cfg)
    assert again.stop.code == "trials" and len(server.chat_requests) == calls


def test_run_command_with_fairnad(server, tmp_path, kb_dir):
    from click.testing import CliRunner

    from nader.cli import main

    server.responder = ScriptedLLM(mutate=True)
    run = tmp_path / "run"
    args = ["run", "--from", str(settings(run)["root"]), "--dataset", "digits", "--preset", "quick",
            "--depths", "1,1,1", "--epochs", "1", "--threads", "1", "--trials", "3", "--run-dir", str(run),
            "--strategy", "fairnad", "--kb", str(kb_dir), "--llm-base-url", server.base_url, "--llm-model", "m",
            "--option", "fair=1", "--option", "pareto=1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(run / "runs.sqlite")
    stages = [json.loads(c)["stage"] for c, in conn.execute(
        "SELECT change FROM archs WHERE arch_id > 0 AND status IN ('ok', 'diverged', 'failed') ORDER BY arch_id")]
    conn.close()
    assert stages == ["I", "II"]


def test_run_without_a_knowledge_base_is_refused_before_training(server, tmp_path):
    from click.testing import CliRunner

    from nader.cli import main

    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "--from", str(settings(run)["root"]), "--dataset", "digits",
                                       "--trials", "3", "--run-dir", str(run), "--strategy", "fairnad",
                                       "--llm-base-url", server.base_url, "--llm-model", "m"])
    assert result.exit_code == 2 and "needs a knowledge base" in result.output and "--kb" in result.output
    assert "Traceback" not in result.output
    assert not (run / "runs.sqlite").exists()  # a refused start leaves no run behind
