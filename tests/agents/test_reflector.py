"""The Reflector: the experience base's three kinds of record keyed by the plan's embedding,
top-5 retrieval, lessons of at most 50 words, training failures."""
from __future__ import annotations


import json

from knowledge_helpers import HashingEmbedder
from llm_fixtures import make_client, no_outside_network, server  # noqa: F401 (fixtures)
from loopback import reply
from nader.agents.modifier import Attempt, Check, Modification
from nader.agents.experiences import ExperienceBase
from nader.agents.reflector import Reflector, block_diff_text, cut_words
from scripted import ScriptedLLM


def test_retrieval_is_by_plan_similarity_top_five(tmp_path):
    base = ExperienceBase(tmp_path, HashingEmbedder())
    for i in range(7):
        base.add("failure", f"add squeeze excitation gate variant {i}", "d", lesson=f"se lesson {i}")
    base.add("success", "replace relu with gelu activation", "d", lesson="gelu lesson")
    base.add("failure", "replace relu with gelu", "d", lesson=None)  # no lesson: never retrieved
    found = base.retrieve("replace relu with gelu activation")
    assert len(found) == 5 and found[0].lesson == "gelu lesson"
    assert all(e.lesson for e in found)
    assert len(base) == 9
    # Another scope (a benchmark setting) shares the database but not the experiences.
    other = ExperienceBase(tmp_path, HashingEmbedder(), scope="bench:full")
    assert other.retrieve("replace relu with gelu activation") == [] and len(other) == 0


def test_lessons_are_cut_at_50_words():
    assert len(cut_words(" ".join(["w"] * 80)).split()) == 50


def test_repair_record_keeps_the_diff(server, tmp_path):
    server.responder = ScriptedLLM()
    client = make_client(server, tmp_path)
    reflector = Reflector(client, ExperienceBase(tmp_path, HashingEmbedder()))
    failing = Attempt("r1", Check(False, "##B##\n0:input\n2:Foo\n", "- line 2 `2:Foo`: error[NAD104] unknown", ["NAD104"]))
    fixed = Attempt("r2", Check(True, "##B##\n0:input\n2:ReLU\n"))
    m = Modification(True, base_text="##B##\n0:input\n2:ReLU\n", attempts=[failing, fixed])
    reflector.record_modification(m, "use an activation", arch_id=3)
    failed = Modification(False, attempts=[failing], error="did not verify")
    reflector.record_modification(failed, "use an activation", arch_id=4)
    reflector.record_training("use an activation", status="ok", valid_acc=80.0, parent_acc=82.5, arch_id=5)
    reflector.record_training("use an activation", status="diverged", valid_acc=None, parent_acc=82.5,
                              error="loss is NaN", arch_id=6)
    reflector.record_training("use an activation", status="ok", valid_acc=85.0, parent_acc=82.5, arch_id=7)
    client.close()
    rows = reflector.experiences.all()
    assert [r.kind for r in rows] == ["repair", "failure", "training-failure", "training-failure", "success"]
    assert "-2:Foo" in rows[0].detail and "+2:ReLU" in rows[0].detail and "NAD104" in rows[0].detail
    assert "NAD104" in rows[1].detail
    assert "fell by 2.50" in rows[2].detail and "loss is NaN" in rows[3].detail
    assert rows[4].accuracy_change == 2.5
    assert all(r.lesson.startswith("After a ") for r in rows)
    # The reflection prompt carried each outcome's kind.
    kinds = [json.dumps(b["messages"]) for b in server.chat_requests]
    assert any("Outcome: repair" in k for k in kinds) and any("Outcome: training-failure" in k for k in kinds)


def test_unusable_lesson_is_retried_once_then_dropped(server, tmp_path):
    server.chat_script = [reply("no json here"), reply("still none")]
    client = make_client(server, tmp_path)
    reflector = Reflector(client, ExperienceBase(tmp_path, HashingEmbedder()))
    reflector.record("failure", "plan", "detail")
    client.close()
    assert len(server.chat_requests) == 2
    assert reflector.experiences.all()[0].lesson is None


def test_block_diff_text():
    assert block_diff_text("a\nb\n", "a\nc\n").splitlines()[-2:] == ["-b", "+c"]
