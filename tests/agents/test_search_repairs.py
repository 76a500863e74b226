"""Repairs in the search (`--repair off|suggest|auto`) against the loopback server, scripted to
reply with broken blocks: the Modifier's first reply feeds a one-input node a second branch
(NAD207), which the compiler repairs. With `auto` (nader's default) the repaired block is the
candidate, recorded with the block as written, the diff and the codes fixed; an interrupted
search resumes into the uninterrupted tree; `status`, `export`, `best` and the report show the
repairs and count the proposals."""
from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from llm_fixtures import no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.knowledge import Idea, KnowledgeBase
from nader.cli import main
from nader.dsl.parser import parse
from nader.runtime.errors import ConfigError
from nader.search.config import SearchConfig
from nader.search.loop import Observer
from nader.search.session import run_search
from scripted import ScriptedLLM, _mutant, fenced
from search_helpers import HashEvaluator, arch_rows, settings

IDEAS = ["replace ReLU activations with GELU", "add a second residual branch with a 1x1 convolution",
         "insert a dropout before the addition", "use depthwise convolutions with larger kernels"]
TRIALS = 5


def _broken(block: str) -> str:
    """The block with the input also fed into its last one-input activation or norm (NAD207)."""
    b = parse(block).program.blocks[0]
    target = [n for n in b.nodes if n.op_name in ("BN", "ReLU", "GELU")][-1]
    return block.rstrip("\n") + f"\n0->{target.id}\n"


class BrokenLLM(ScriptedLLM):
    """The scripted agents, but the Modifier's first reply of each conversation is a mutant of the
    parent broken as above; a repair turn gets the unbroken mutant."""

    def __call__(self, body):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        answer = super().__call__(body)
        if "Modify it according to this plan" not in first:
            return answer
        rounds = sum(1 for m in body["messages"] if m["role"] == "assistant")
        mutant = answer.text.split("```\n")[1].split("\n```")[0]
        return reply(fenced(_broken(mutant) if rounds == 0 else mutant))


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kb")
    with KnowledgeBase.open(path) as kb:
        kb.add_ideas([Idea(t) for t in IDEAS])
    return path


def _cfg(run, server, kb_dir, trials=TRIALS, options=None, **extra):
    options = {"kb": str(kb_dir), "llm_base_url": server.base_url, "llm_model": "local-model", "rounds": 2,
               **(options or {})}
    return settings(run, strategy="nader", strategy_options=options, trials=trials, seeds=[0], **extra)


class StopAfter(Observer):
    def __init__(self, arch_id):
        self.arch_id = arch_id

    def finished(self, node):
        if node.arch_id == self.arch_id:
            raise KeyboardInterrupt


def test_repair_auto_records_resumes_and_reports_the_repairs(server, kb_dir, tmp_path):
    server.responder = BrokenLLM(mutate=True)
    whole = run_search(_cfg(tmp_path / "whole", server, kb_dir), evaluator=HashEvaluator())
    assert whole.stop.code == "trials"
    calls_whole = len(server.chat_requests)
    tree = arch_rows(tmp_path / "whole")
    llm = [r for r in tree if r["origin"] == "llm"]
    repaired = [json.loads(r["change"]) for r in llm if "repair" in json.loads(r["change"])]
    assert len(repaired) == len(llm) >= TRIALS - 1  # every first reply was broken, and repaired
    for change in repaired:
        repair = change["repair"]
        assert repair["fixed"] == ["NAD207"] and repair["applied"][0]["safety"] == "unsafe"
        assert "\n0->" in repair["written"] and repair["diff"].startswith("--- a/block")
        assert change["rounds"] == 1 and change["first_ok"] is False  # no second LLM round
    # One Modifier call per proposal: the compiler, not the LLM, repaired each.
    conn = sqlite3.connect(tmp_path / "whole" / "runs.sqlite")
    modifier_calls = conn.execute("SELECT COUNT(*) FROM llm_calls WHERE role = 'modifier'").fetchone()[0]
    lessons = [d for d, in conn.execute("SELECT detail FROM experiences WHERE kind = 'repair'")]
    conn.close()
    assert modifier_calls == len(llm)
    assert lessons and all("The compiler repaired it with:\n- NAD207" in d for d in lessons)

    # Interrupted after the first child trained, then resumed: the same tree, repairs included.
    with pytest.raises(KeyboardInterrupt):
        run_search(_cfg(tmp_path / "parts", server, kb_dir), observer=StopAfter(1), evaluator=HashEvaluator())
    rest = run_search(_cfg(tmp_path / "parts", server, kb_dir), evaluator=HashEvaluator())
    assert rest.resumed and arch_rows(tmp_path / "parts") == tree
    assert len(server.chat_requests) > calls_whole

    run = tmp_path / "whole"
    status = CliRunner().invoke(main, ["status", str(run)], catch_exceptions=False)
    assert status.exit_code == 0
    assert f"LLM proposals: 0 valid as written, {len(llm)} valid after repair (repaired by the compiler), 0 invalid" \
        in status.output
    assert "nader *" in status.output and "* repaired by the compiler" in status.output
    data = json.loads(CliRunner().invoke(main, ["status", str(run), "--format", "json"]).output)
    assert data["proposals"] == {"valid_as_written": 0, "valid_after_repair": len(llm), "invalid": 0}
    exported = json.loads(CliRunner().invoke(main, ["export", str(run), "--format", "json"]).output)
    assert {r["repair"] for r in exported if r["origin"] == "llm"} == {"repaired by the compiler (NAD207)"}
    assert exported[0]["repair"] is None
    best = CliRunner().invoke(main, ["best", str(run)]).output
    assert best.startswith("# nader-search best") and ("repaired by the compiler" in best.splitlines()[0]) == \
        (json.loads(CliRunner().invoke(main, ["best", str(run), "--format", "json"]).output)["repair"] is not None)

    from nader.search.report.load import load_run
    from nader.search.report.render import data_json, render_report

    r, archs = load_run(run)
    page = render_report(r, archs)
    assert 'id="repairs"' in page and "valid after repair (repaired by the compiler)" in page
    assert page.count('class="repaired"') == len(llm) and "merge" in page
    assert sum(a.get("repaired") == "repaired by the compiler" for a in json.loads(data_json(r, archs))["archs"]) \
        == len(llm)


def test_repair_off_and_suggest_leave_the_fix_to_the_llm(server, kb_dir, tmp_path):
    server.responder = BrokenLLM(mutate=True)
    run_search(_cfg(tmp_path / "off", server, kb_dir, trials=3, repair="off"), evaluator=HashEvaluator())
    off = [json.loads(r["change"]) for r in arch_rows(tmp_path / "off") if r["origin"] == "llm"]
    assert off and all("repair" not in c and c["rounds"] == 2 for c in off)
    start = len(server.chat_requests)
    run_search(_cfg(tmp_path / "suggest", server, kb_dir, trials=3, repair="suggest"), evaluator=HashEvaluator())
    suggest = [json.loads(r["change"]) for r in arch_rows(tmp_path / "suggest") if r["origin"] == "llm"]
    assert suggest and all("repair" not in c and c["suggested"] == 1 for c in suggest)
    turns = [b["messages"][-1]["content"] for b in server.chat_requests[start:]
             if sum(m["role"] == "assistant" for m in b["messages"]) == 1]
    assert turns and all("proposed fix" in t and "NAD207 (" in t for t in turns)
    status = CliRunner().invoke(main, ["status", str(tmp_path / "off")]).output
    assert f"LLM proposals: {len(off)} valid as written, 0 valid after repair" in status


def test_repair_mode_defaults_identity_and_refusal():
    assert SearchConfig(strategy="nader").effective_repair() == "auto"
    assert SearchConfig(strategy="fairnad").effective_repair() == "auto"
    assert SearchConfig(strategy="rea").effective_repair() == "off"
    assert SearchConfig(strategy="nader").identity()["repair"] == "auto"
    assert "repair" not in SearchConfig(strategy="nader", repair="off").identity()
    with pytest.raises(ConfigError, match="writes no block"):
        SearchConfig(strategy="rea", repair="auto").check_repair()
    with pytest.raises(ConfigError, match="choose one of"):
        SearchConfig(strategy="nader", repair="always").check_repair()


def test_genius_block_check_repairs_with_auto_and_suggests_with_suggest():
    from nader.agents.genius import Genius

    arch = open(settings("x")["root"]).read()
    block = arch.split("##ResNetBasic_stem##")[0]
    broken = "```\n" + _broken(_mutant(block, "genius")) + "```"
    genius = Genius(None, repairs=1, iterations=3, dataset="cifar10", skeleton="nb201")
    record: dict = {}
    text, feedback = genius.block_check(arch, "auto", record)(broken)
    assert text is not None and record["repair"]["fixed"] == ["NAD207"] and "_stem##" in text
    text, feedback = genius.block_check(arch, "suggest", record)(broken)
    assert text is None and "proposed fix" in feedback and record["suggested"] == 1 and "repair" not in record
    text, feedback = genius.block_check(arch)(broken)
    assert text is None and "proposed fix" not in feedback and "NAD207" in feedback
    assert SearchConfig(strategy="genius").effective_repair() == "auto"
    assert SearchConfig(strategy="genius", space="nb201").effective_repair() == "off"
    with pytest.raises(ConfigError, match="cells"):
        SearchConfig(strategy="genius", space="nb201", repair="auto").check_repair()


def test_run_flag_takes_a_mode_and_alone_still_means_the_store(tmp_path):
    run = CliRunner().invoke(main, ["run", "--from", settings("x")["root"], "--strategy", "rea", "--repair", "auto",
                                    "--run-dir", str(tmp_path / "r")])
    assert run.exit_code == 2 and "--repair auto: the rea strategy writes no block" in run.output
    alone = CliRunner().invoke(main, ["run", "--repair", "--strategy", "rea", "--run-dir", str(tmp_path / "s")])
    assert alone.exit_code == 2 and "no root architecture" in alone.output


class SameBrokenLLM(ScriptedLLM):
    """The scripted agents, but the Modifier always writes the same broken block."""

    def __call__(self, body):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "Modify it according to this plan" not in first:
            return super().__call__(body)
        block = open(settings("x")["root"]).read().split("##ResNetBasic_stem##")[0].replace("4:ReLU", "4:GELU")
        return reply(fenced(_broken(block)))


def test_a_repaired_candidate_is_deduplicated_like_any_other(server, kb_dir, tmp_path):
    server.responder = SameBrokenLLM()
    run_search(_cfg(tmp_path / "r", server, kb_dir, trials=3, max_invalid=6, options={"selection": "uniform"}),
               evaluator=HashEvaluator())
    rows = [r for r in arch_rows(tmp_path / "r") if r["origin"] == "llm"]
    first = next(r for r in rows if r["status"] == "ok")
    assert "repair" in json.loads(first["change"])
    dups = [r for r in rows if r["status"] == "duplicate"]
    assert dups and all(r["duplicate_of"] == first["arch_id"] and "repair" in json.loads(r["change"]) for r in dups)
