"""Prompts are data: every agent prompt is a documented template, and the language reference in
the Modifier's prompts is generated from the op registry."""
from __future__ import annotations


import pytest

from nader.agents.modifier import Modifier
from nader.agents.prompts import prompt_doc, prompt_names, render
from nader.dsl.ops import REGISTRY

def test_prompts_are_found_by_file_name():
    """Prompts are discovered (every AGENT_ACTION.vN.j2 file), so a new one needs no list."""
    names = prompt_names()
    assert {"proposer_plan.v1", "modifier_implement.v1", "reader_relevance.v1"} <= set(names)
    assert not any(name.startswith("_") for name in names)  # partials such as _attribute_tree.j2


@pytest.mark.parametrize("name", prompt_names())
def test_each_prompt_is_a_documented_template(name):
    doc = prompt_doc(name)
    assert doc.startswith(name) and "Inputs:" in doc and "Output:" in doc


@pytest.mark.parametrize("name", ["modifier_implement.v1", "modifier_interface.v1", "genius_block.v2"])
def test_every_registered_operation_is_in_the_language_reference(name):
    variables = dict(reference=Modifier.language_reference(), block="##B##\n0:input\n1:output\n0->1", plan="p",
                     experiences=[], block_name="B", stem="", downsample="", error="", dataset="digits",
                     skeleton="nb201", history=[], iteration=1, iterations=10)
    system = render(name, **variables)[0]["content"]
    missing = [op.name for op in REGISTRY.values() if f"- {op.signature()}" not in system]
    assert not missing, f"operations missing from the language reference: {missing}"
    assert len(REGISTRY) > 20


def test_proposer_prompt_without_ranking_asks_for_the_plan_only():
    ideas = [{"n": 1, "text": "use squeeze-and-excitation"}]
    text = render("proposer_plan.v1", block="##B##", history=[], ideas=ideas, rank=False)[-1]["content"]
    assert "ranking" not in text and "use squeeze-and-excitation" in text
    ranked = render("proposer_plan.v1", block="##B##", history=["added GELU"], ideas=ideas * 2, rank=True)
    assert '"ranking"' in ranked[-1]["content"] and "added GELU" in ranked[-1]["content"]
