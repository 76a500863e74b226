"""The Modifier against the loopback server: extraction, verification, the compiler's feedback
for k rounds, unchanged blocks sent back, and the stem/downsample step."""
from __future__ import annotations


import sqlite3
from pathlib import Path

import pytest

from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from nader.agents.modifier import Modifier
from nader.dsl.parser import parse
from nader.compiler.reply_checks import check_architecture, check_base_block
from scripted import ScriptedLLM, fenced

REPO = Path(__file__).resolve().parents[2]
ARCH = (REPO / "examples" / "resnet_basic.nad").read_text()
BASE = ARCH.split("##ResNetBasic_stem##")[0]
PLAN = "Replace the first ReLU with GELU."
GOOD = BASE.replace("4:ReLU", "4:GELU")
BROKEN = GOOD.replace("6:BN", "6:BatchNormish")  # an unknown operation


def test_check_base_block_reports_code_line_and_help():
    check = check_base_block("```\n" + BASE.replace("3:BN", "3:BatchNormish") + "```")
    assert not check.ok
    assert "BatchNormish" in check.feedback and "error[NAD" in check.feedback
    assert "help:" in check.feedback
    assert check_base_block("```\n" + GOOD + "```").ok


def test_no_block_in_reply_is_feedback():
    check = check_base_block("I would add a GELU.")
    assert not check.ok and check.codes == ["no-block"]


def test_feedback_round_repairs_a_broken_block(server, tmp_path):
    llm = ScriptedLLM({PLAN: [BROKEN, GOOD]})
    server.responder = llm
    client = make_client(server, tmp_path)
    m = Modifier(client, rounds=3).modify(ARCH, PLAN, ["Keep Add nodes at two inputs."], arch_id="1")
    client.close()
    assert m.ok and not m.first_ok and m.rounds == 2
    assert "4:GELU" in m.base_text and m.arch_text.count("##") == 6
    second = server.chat_requests[1]["messages"]
    assert second[-1]["role"] == "user" and "error[NAD" in second[-1]["content"]
    assert "Keep Add nodes at two inputs." in second[1]["content"]
    # The repair turn quotes the offending line of the reply.
    assert "`6:BatchNormish`" in second[-1]["content"]
    assert m.repaired_from is not None and "6:BatchNormish" in m.repaired_from.check.text


def test_without_feedback_one_round_only(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [BROKEN, GOOD]})
    client = make_client(server, tmp_path)
    m = Modifier(client, rounds=1).write_block(BASE, PLAN)
    client.close()
    assert not m.ok and m.rounds == 1 and len(server.chat_requests) == 1
    assert "did not verify after 1 round" in m.error


def test_unchanged_block_is_sent_back(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [BASE, GOOD]})
    client = make_client(server, tmp_path)
    m = Modifier(client).write_block(BASE, PLAN)
    client.close()
    assert m.ok and m.rounds == 2
    assert "same graph" in server.chat_requests[1]["messages"][-1]["content"]


def test_gives_up_after_k_rounds(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [BROKEN]})
    client = make_client(server, tmp_path)
    m = Modifier(client, rounds=3).write_block(BASE, PLAN)
    client.close()
    assert not m.ok and m.rounds == 3 and len(server.chat_requests) == 3


def test_stem_and_downsample_written_when_the_network_does_not_build(server, tmp_path):
    # A parent whose downsample block does not halve the resolution cannot build a network:
    # the Modifier asks for stem and downsample blocks and checks the network they build.
    stem_down = ARCH[ARCH.index("##ResNetBasic_stem##"):]
    bad_parent = BASE + stem_down.replace("kernel_size=3,stride=2", "kernel_size=3,stride=1") \
        .replace("7:AvgPool2d(kernel_size=2,stride=2)", "7:Identity")
    assert not check_architecture(bad_parent, "nb201").ok
    server.responder = ScriptedLLM({PLAN: [GOOD]}, interface=stem_down)
    client = make_client(server, tmp_path)
    m = Modifier(client).modify(bad_parent, PLAN, arch_id="2")
    client.close()
    assert m.ok and len(m.interface_attempts) == 1 and m.rounds == 2
    assert check_architecture(m.arch_text, "nb201").ok
    assert "stride=2" in m.arch_text and "4:GELU" in m.arch_text
    interface_prompt = server.chat_requests[1]["messages"][-1]["content"]
    assert "could not be built" in interface_prompt and "downsample" in interface_prompt


def test_interface_failure_after_k_rounds(server, tmp_path):
    stem_down = ARCH[ARCH.index("##ResNetBasic_stem##"):]
    bad_parent = BASE + stem_down.replace("7:AvgPool2d(kernel_size=2,stride=2)", "7:Identity") \
        .replace("kernel_size=3,stride=2", "kernel_size=3,stride=1")
    # Each interface reply keeps a downsample block that does not downsample (a lone stem would do:
    # the skeleton's standard downsample block fills in).
    still_bad = "##ResNetBasic_downsample##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=3,stride=1)\n0->2\n2->1\n"
    server.responder = ScriptedLLM({PLAN: [GOOD]}, interface=still_bad)
    client = make_client(server, tmp_path)
    m = Modifier(client, rounds=2).modify(bad_parent, PLAN)
    client.close()
    assert not m.ok and len(m.interface_attempts) == 2 and "stem and downsample" in m.error


def test_the_architecture_check_uses_the_searchs_dataset_sizes():
    from nader.compiler.reply_checks import check_architecture
    from nader.search.strategies.nader import NaderStrategy

    # Valid where H % 8 == 0: CIFAR's stages (32, 16, 8), not digits' (16, 8, 4).
    eights = BASE.replace("4:ReLU", "4:reshape(B,C,H/8,8,W)\n9:reshape(B,C,H,W)").replace("4->5", "4->9\n9->5")
    arch = eights + ARCH[ARCH.index("##ResNetBasic_stem##"):]
    assert check_architecture(arch, "nb201", "cifar10").ok
    refused = check_architecture(arch, "nb201", "digits")
    assert not refused.ok and "4x4" in refused.feedback

    from nader.search.strategies.base import SearchContext

    strategy = NaderStrategy()
    strategy.bind(SearchContext(skeleton="nb201", dataset="digits"))
    assert strategy.network == ("nb201", "digits")


def test_a_reply_cut_at_the_token_limit_is_told_so_before_the_diagnostics(server, tmp_path):
    from loopback import reply, truncated

    rambling = "# ResNetBasic\n" * 40 + GOOD.split("7->8")[0] + "7-"  # cut before the last edges
    answers = iter([truncated(rambling), reply(fenced(GOOD))])
    server.responder = lambda body: next(answers)
    client = make_client(server, tmp_path)
    m = Modifier(client, rounds=2).write_block(BASE, PLAN)
    client.close()
    assert m.ok and not m.first_ok
    repair = server.chat_requests[1]["messages"][-1]["content"]
    note = repair.index("cut off at the token limit")
    assert note < repair.index("error[NAD")  # the likelier cause first, then the compiler's findings


def test_a_reply_that_ended_on_its_own_gets_no_cut_off_note(server, tmp_path):
    server.responder = ScriptedLLM({PLAN: [BROKEN, GOOD]})
    client = make_client(server, tmp_path)
    Modifier(client, rounds=2).write_block(BASE, PLAN)
    client.close()
    assert "cut off" not in server.chat_requests[1]["messages"][-1]["content"]


def test_every_repair_mode_has_its_policy():
    from nader.agents.repair_policy import POLICIES
    from nader.compiler.reply_repair import REPAIR_MODES

    assert tuple(POLICIES) == REPAIR_MODES  # the search's `--repair` choices


@pytest.mark.parametrize("mode", ["off", "suggest", "auto"])
def test_the_stem_and_downsample_round_gets_plain_feedback_in_every_repair_mode(server, tmp_path, mode):
    """The compiler repairs base blocks, not stem and downsample replies: every mode answers a
    failing interface reply with modifier_repair.v1 (with `suggest` this round used to crash)."""
    stem_down = ARCH[ARCH.index("##ResNetBasic_stem##"):]
    bad_parent = BASE + stem_down.replace("7:AvgPool2d(kernel_size=2,stride=2)", "7:Identity") \
        .replace("kernel_size=3,stride=2", "kernel_size=3,stride=1")
    still_bad = "##ResNetBasic_downsample##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=3,stride=1)\n0->2\n2->1\n"
    scripted = ScriptedLLM({PLAN: [GOOD]})

    def respond(body):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "halves H" not in first:
            return scripted(body)
        rounds = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return reply(fenced(still_bad if rounds == 0 else stem_down))

    from loopback import reply

    server.responder = respond
    client = make_client(server, tmp_path)
    m = Modifier(client, rounds=3, repair=mode).modify(bad_parent, PLAN, arch_id="3")
    client.close()
    assert m.ok and len(m.interface_attempts) == 2 and m.suggested == 0 and m.repair is None
    feedback = server.chat_requests[2]["messages"][-1]["content"]
    assert feedback.startswith("The compiler rejected your block") and "proposed fix" not in feedback
    assert m.architecture is not None and m.architecture.block("downsample").name == "ResNetBasic_downsample"


class RenamedMutant(ScriptedLLM):
    """The scripted agents; the Modifier's reply is a mutant of the parent named `Mutant`."""

    def __call__(self, body):
        answer = super().__call__(body)
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "Modify it according to this plan" not in first:
            return answer
        from loopback import reply

        block = answer.text.split("```\n")[1].split("\n```")[0]
        return reply(fenced(block.replace("##ResNetBasic##", "##Mutant##")))


def test_the_llms_block_is_verified_once_on_its_way_to_a_trial(server, tmp_path, monkeypatch):
    """check_base_block verifies the reply's block; the architecture check builds on that verdict
    and the loop's checks take the Modifier's Architecture: from reply to trial, each block of the
    new architecture is verified once (on main: the base block three times)."""
    from collections import Counter

    from nader.agents.knowledge import Idea, KnowledgeBase
    from nader.compiler.passes import verify
    from nader.search.session import run_search
    from search_helpers import settings
    from test_strategies_resume import HashEvaluator

    kb = tmp_path / "kb"
    with KnowledgeBase.open(kb) as base:
        base.add_ideas([Idea("replace ReLU activations with GELU"), Idea("insert a BN after the addition")])
    verified: Counter = Counter()
    real = verify.check_structure

    def counted(block, role, sink):
        verified[block.name] += 1
        return real(block, role, sink)

    monkeypatch.setattr(verify, "check_structure", counted)  # once per verify_block
    server.responder = RenamedMutant(mutate=True)
    options = {"kb": str(kb), "llm_base_url": server.base_url, "llm_model": "local-model", "experience": False}
    run_search(settings(tmp_path / "run", strategy="nader", strategy_options=options, trials=2, seeds=[0]),
               evaluator=HashEvaluator())
    with sqlite3.connect(tmp_path / "run" / "runs.sqlite") as conn:
        trained = conn.execute("SELECT text FROM archs WHERE origin = 'llm' AND status = 'ok'").fetchall()
    assert len(trained) == 1 and "##Mutant##" in trained[0][0]
    base, stem, down = (b.name for b in parse(trained[0][0]).program.blocks)
    assert base == "Mutant" and verified[base] == 1 and verified[stem] == 1 and verified[down] == 1, verified
