"""Mutation operators (nader.compiler.mutate): every mutant verifies and differs from its parent.

Mutants are checked independently of the operators' own safety net: each is printed with the
formatter, parsed back, verified in its role and hashed, and whole architectures are loaded
again by the network builder.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT, run_nadc
from strategies import blocks, sound_blocks

from nader.compiler.architecture import load_architecture
from nader.compiler.codes import find_code
from nader.compiler.mutate import (OPERATORS, CannotApply, MutationError, apply_mutation, load_parent, mutate,
                                   mutate_block)
from nader.compiler.mutate.rewrite import Rewrite
from nader.compiler.network import build_network
from nader.compiler.passes.canonical import canonical_hash
from nader.compiler.passes.verify import verify_block
from nader.dsl.format import format_block
from nader.dsl.ir import Block, Role
from nader.dsl.parser import parse

EXAMPLE_TEXT = (REPO_ROOT / "examples" / "resnet_basic.nad").read_text(encoding="utf-8")
SOME = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def one_block(text: str) -> Block:
    return parse(text).program.blocks[0]


def assert_valid_mutant(parent: Block, mutant: Block, role: Role) -> None:
    """The mutant, printed and parsed back, verifies in `role` and hashes differently from its parent."""
    reparsed = parse(format_block(mutant))
    assert reparsed.ok, [str(d) for d in reparsed.diagnostics]
    block = reparsed.program.blocks[0]
    report = verify_block(block, role=role)
    assert report.ok, (format_block(mutant), [d.message for d in report.diagnostics if d.is_error])
    assert canonical_hash(block) != canonical_hash(parent), format_block(mutant)


def example_base() -> Block:
    return load_parent(EXAMPLE_TEXT)[1].base


# Half-width convolutions, a concat, a channels-last LayerNorm and an SE-style gate.
MIXED_BLOCK = """\
##Mixed##
0:input
1:output
2:Conv2d(out_channels=C/2,kernel_size=1)
3:Conv2d(out_channels=C/2,kernel_size=3)
4:concat
5:permute(0,2,3,1)
6:LN
7:permute(0,3,1,2)
8:GELU
9:mean(dim=(2,3))
10:Conv2d(out_channels=C,kernel_size=1)
11:Sigmoid
12:Mul
0->2
0->3
3,2->4
4->5
5->6
6->7
7->8
8->9
9->10
10->11
8,11->12
12->1
"""


# -- the bundled example and a fixture -------------------------------------------------------

@pytest.mark.parametrize("name", list(OPERATORS))
@pytest.mark.parametrize("fixture", ["example", "mixed"])
def test_every_site_gives_a_valid_different_block(fixture, name):
    op = OPERATORS[name]
    parent = example_base() if fixture == "example" else one_block(MIXED_BLOCK)
    sites = op.candidates(parent)
    if fixture == "example":
        assert sites, f"{name} finds no site in the ResNet basic block"
    for site in sites:
        assert_valid_mutant(parent, op.apply(parent, site), Role.BASE)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_mutate_returns_a_whole_architecture_that_loads_and_replays(name):
    m = mutate(EXAMPLE_TEXT, random.Random(11), operator=name)
    assert m.operator == name
    arch = load_architecture(m.arch_text, "nb201")
    parent = load_architecture(EXAMPLE_TEXT, "nb201")
    assert canonical_hash(arch.base) != canonical_hash(parent.base)
    # The stem and downsample blocks are untouched.
    assert format_block(arch.stem) == format_block(parent.stem)
    assert format_block(arch.downsample) == format_block(parent.downsample)
    # The arguments survive JSON (the modification tree stores them) and replay the same mutant.
    args = json.loads(json.dumps(m.args))
    assert apply_mutation(EXAMPLE_TEXT, name, args).arch_text == m.arch_text
    assert m.diff.startswith("--- parent\n+++ mutant\n") and "\n+" in m.diff


def test_mutate_is_deterministic_given_the_rng_and_varies_with_it():
    first = [mutate(EXAMPLE_TEXT, random.Random(seed)) for seed in range(12)]
    again = [mutate(EXAMPLE_TEXT, random.Random(seed)) for seed in range(12)]
    assert [(m.operator, m.args, m.arch_text) for m in first] == [(m.operator, m.args, m.arch_text) for m in again]
    assert len({m.arch_text for m in first}) > 6
    assert len({m.operator for m in first}) > 4


def test_a_chain_of_mutations_stays_valid():
    rng, text = random.Random(3), EXAMPLE_TEXT
    for _ in range(12):
        m = mutate(text, rng)
        assert_valid_mutant(load_parent(text)[1].base, m.block, Role.BASE)
        text = m.arch_text
    load_architecture(text, "nb201")


# -- what the rewrites do --------------------------------------------------------------------

def test_inserting_after_a_concat_operand_keeps_the_operand_order():
    parent = one_block(MIXED_BLOCK)
    op = OPERATORS["insert-se"]
    mutant = op.apply(parent, next(s for s in op.candidates(parent) if s.args["node"] == 2))
    gated = mutant.inputs_of(4)
    assert gated[0] == 3 and gated[1] not in (2, 3)
    assert mutant.node(gated[1]).op_name == "Mul" and 2 in mutant.inputs_of(gated[1])


@pytest.mark.parametrize("name,first,back,fixture", [("swap-normalization", "LN", "BN", "example"),
                                                     ("swap-normalization", "BN", "LN", "mixed"),
                                                     ("swap-activation", "GELU", "ReLU", "example")])
def test_swapping_there_and_back_restores_the_block(name, first, back, fixture):
    op = OPERATORS[name]
    parent = example_base() if fixture == "example" else one_block(MIXED_BLOCK)
    site = next(s for s in op.candidates(parent) if s.args["to"] == first)
    there = op.apply(parent, site)
    (back_site,) = [s for s in op.candidates(there) if s.args["to"] == back]  # only the node just swapped
    assert canonical_hash(op.apply(there, back_site)) == canonical_hash(parent)


def test_separable_conv_splits_one_conv_into_depthwise_and_pointwise():
    op, parent = OPERATORS["separable-conv"], example_base()
    mutant = op.apply(parent, op.candidates(parent)[0])
    convs = Counter(str(n.params["groups"]) for n in mutant.nodes if n.op_name == "Conv2d")
    assert convs == Counter({"1": 2, "C": 1})


def test_deleting_the_residual_add_removes_the_dead_branch():
    op, parent = OPERATORS["delete-node"], example_base()
    mutant = op.apply(parent, next(s for s in op.candidates(parent) if s.args == {"node": 7, "keep": 0}))
    assert [n.op_name for n in mutant.nodes] == ["input", "output", "ReLU"]


def test_resize_conv_changes_only_inner_convolutions():
    op, parent = OPERATORS["resize-conv"], example_base()
    # Node 2 feeds node 5 through BN and ReLU; node 5 feeds the residual Add, so it is not inner.
    assert {s.args["node"] for s in op.candidates(parent)} == {2}


def test_operators_say_why_they_cannot_apply():
    no_conv = "##Plain##\n0:input\n1:output\n2:BN\n3:ReLU\n0->2\n2->3\n3->1\n"
    assert OPERATORS["separable-conv"].candidates(one_block(no_conv)) == []
    stem_down = EXAMPLE_TEXT[EXAMPLE_TEXT.index("##ResNetBasic_stem##"):]
    with pytest.raises(CannotApply, match="separable-conv: needs a Conv2d"):
        mutate(no_conv + stem_down, random.Random(0), operator="separable-conv")
    with pytest.raises(MutationError, match="unknown mutation operator"):
        mutate(EXAMPLE_TEXT, random.Random(0), operator="no-such-operator")
    with pytest.raises(MutationError, match="does not load"):
        mutate("##Broken##\n0:input\n1:output\n2:Conv2d(out_channels=C)\n0->2\n2->1\n" + stem_down, random.Random(0))
    op = OPERATORS["change-conv"]
    with pytest.raises(CannotApply, match="not a Conv2d"):
        op.apply(example_base(), replace(op.candidates(example_base())[0], args={"node": 3, "param": "kernel_size",
                                                                                   "value": 5}))


def test_node_ids_may_be_names_and_fresh_ids_collide_with_none():
    parent = example_base()
    rename = {0: 0, 1: 1, 2: "conv_a", 3: "10", 4: "2a", 5: 5, 6: "bn", 7: "add", 8: 8}
    named = replace(parent, nodes=tuple(replace(n, id=rename[n.id]) for n in parent.nodes),
                    edges=tuple(replace(e, sources=tuple(rename[s] for s in e.sources), target=rename[e.target])
                                for e in parent.edges))
    assert Rewrite(named).fresh_id() == 11  # "10" is taken by a name
    as_text = replace(parent, nodes=tuple(replace(n, id=str(n.id)) for n in parent.nodes),
                      edges=tuple(replace(e, sources=tuple(map(str, e.sources)), target=str(e.target))
                                  for e in parent.edges))
    assert Rewrite(as_text).fresh_id() == "9"  # a front end keeping ids as text gets text
    for name, op in OPERATORS.items():
        sites = op.candidates(named)
        assert sites, name
        for site in sites[:4]:
            mutant = op.apply(named, site)
            texts = [str(n.id) for n in mutant.nodes]
            assert len(texts) == len(set(texts)), (name, texts)
            assert verify_block(mutant, role=Role.BASE).ok


# -- the compatibility corpus ----------------------------------------------------------------

def test_operators_on_every_corpus_architecture(compat_dir: Path):
    applied: Counter = Counter()
    for path in sorted((compat_dir / "blocks").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        _, arch = load_parent(text, path.name)
        role = Role.CELL if arch.cells else Role.BASE
        rng = random.Random(path.name)
        for name, op in OPERATORS.items():
            sites = op.candidates(arch.base, role)
            for site in rng.sample(sites, min(2, len(sites))):
                assert_valid_mutant(arch.base, op.apply(arch.base, site, role), role)  # sites are exact
                applied[name] += 1
        m = mutate(text, rng)
        load_architecture(m.arch_text, "darts" if arch.cells else "nb201", stem_stride=arch.stem_stride)
    assert set(applied) == set(OPERATORS), applied


# -- generated blocks --------------------------------------------------------------------------

@SOME
@given(sound_blocks(), st.sampled_from(list(OPERATORS)), st.randoms(use_true_random=False))
def test_a_site_of_a_generated_block_gives_a_valid_mutant_or_says_it_cannot(block, name, rng):
    parent = one_block(format_block(block))
    op = OPERATORS[name]
    sites = op.candidates(parent)
    if not sites:
        return
    site = rng.choice(sites)
    try:
        mutant = op.apply(parent, site)
    except CannotApply as error:
        assert str(error)
        return
    assert_valid_mutant(parent, mutant, parent.inferred_role())


@SOME
@given(blocks(with_comments=False), st.randoms(use_true_random=False))
def test_mutating_any_block_never_returns_an_invalid_one(block, rng):
    parent = one_block(format_block(block))
    parent_ok = verify_block(parent).ok
    try:
        mutant, site = mutate_block(parent, rng)
    except CannotApply as error:  # a valid parent where no operator applies
        assert parent_ok and str(error).startswith("no mutation applies")
        return
    except MutationError as error:
        assert not parent_ok and "does not verify" in str(error)
        return
    assert site.operator in OPERATORS
    assert_valid_mutant(parent, mutant, parent.inferred_role())


# -- PyTorch -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["insert-channel-attention", "add-branch", "swap-normalization"])
def test_mutants_build_and_run_on_the_nb201_skeleton(name):
    import torch

    m = mutate(EXAMPLE_TEXT, random.Random(5), operator=name)
    module, _ = build_network(m.arch_text, "nb201", "digits", widths=[8], depths=[1, 1, 1])
    parent, _ = build_network(EXAMPLE_TEXT, "nb201", "digits", widths=[8], depths=[1, 1, 1])
    module.eval()
    with torch.no_grad():
        out = module(torch.randn(2, 3, 16, 16))
    assert out.shape == (2, 10) and torch.isfinite(out).all()
    layers = Counter(type(x).__name__ for x in module.modules())
    assert layers != Counter(type(x).__name__ for x in parent.modules()), layers


# -- nadc explain ---------------------------------------------------------------------------------

def test_explain_lists_the_operators_and_explains_each():
    listing = run_nadc(["explain", "mutations"])
    assert listing.code == 0
    assert [line.split()[0] for line in listing.stdout.splitlines()] == list(OPERATORS)
    for name, op in OPERATORS.items():
        assert find_code(name) is None, f"{name} is also a diagnostic's name"
        page = run_nadc(["explain", name])
        assert page.code == 0, page.stderr
        assert page.stdout.startswith(f"# {name}\n") and op.summary in page.stdout
        assert "## Example" in page.stdout and f"{name}(" in page.stdout


def test_docs_list_the_operators_as_the_table_does():
    import re

    from nader.compiler.mutate.table import reference_table

    doc = (REPO_ROOT / "docs" / "mutations.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- mutations:begin -->\n(.*?)\n<!-- mutations:end -->", doc, re.S)
    assert match, "docs/mutations.md lacks the <!-- mutations:begin --> ... <!-- mutations:end --> markers"
    assert match.group(1) == reference_table(), "regenerate with python scripts/gen_docs.py"


def test_sites_use_only_the_declared_arguments():
    parent = example_base()
    for name, op in OPERATORS.items():
        for site in op.candidates(parent):
            assert set(site.args) <= set(op.arguments), (name, site.args)


def test_each_operator_module_defines_one_operator_and_all_are_registered():
    """Operators are discovered: a new file in operators/ is registered without editing a list."""
    from nader.compiler.mutate.operators import CLASSES

    assert set(CLASSES) >= {"swap_activation", "insert_se"}
    several = {module: [c.__name__ for c in classes] for module, classes in CLASSES.items() if len(classes) != 1}
    assert not several, f"each module in compiler/mutate/operators/ defines exactly one operator: {several}"
    names = [classes[0].name for classes in CLASSES.values()]
    assert sorted(names) == sorted(OPERATORS), "two operators share a name"


#: The digest of the draws and mutants below as the commit before mutations ran on the interpreter's
#: Transformer made them (a64ffd7's Rewrite): rewriting through the walk changed no mutant, no draw.
DRAWS_DIGEST = "f3bc7ba7e52ad815f343e3f8adfb38126b7bf9dc8ba70edf7788f6a460f18e7a"


def test_mutation_draws_and_mutants_are_those_of_the_commit_before_the_transformer():
    import hashlib

    digest = hashlib.sha256()
    for text in (EXAMPLE_TEXT, MIXED_BLOCK):
        for seed in range(30):
            try:
                m = mutate(text, random.Random(seed))
                digest.update(json.dumps([m.operator, m.args, m.arch_text], sort_keys=True).encode())
            except (CannotApply, MutationError) as error:
                digest.update(str(error).encode())
        for block in parse(text).program.blocks:
            for op in OPERATORS.values():
                for site in op.candidates(block):
                    try:
                        digest.update(format_block(op.apply(block, site)).encode())
                    except CannotApply as error:
                        digest.update(str(error).encode())
    assert digest.hexdigest() == DRAWS_DIGEST
