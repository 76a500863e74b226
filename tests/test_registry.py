"""Every registered operation has a rule in every table that hangs on the registry."""
import pytest

from nader.dsl.ops import REGISTRY, Group, Op, in_order, reference_text


def test_every_compute_op_has_a_shape_rule():
    from nader.compiler.passes.interpreter import missing_handlers
    from nader.compiler.passes.shapes import SHAPE_RULES
    missing = missing_handlers(SHAPE_RULES)
    assert not missing, f"operations without a shape rule: {missing}"


def test_every_compute_op_has_a_torch_lowering():
    from nader.compiler.backends.torch_backend import LOWERINGS
    from nader.compiler.passes.interpreter import missing_handlers
    missing = missing_handlers(LOWERINGS)
    assert not missing, f"operations without a PyTorch lowering: {missing}"


def test_the_output_terminal_has_a_shape_rule_and_inputs_come_from_contracts():
    from nader.compiler.passes.shapes import SHAPE_RULES, contract
    from nader.dsl.ir import Role
    assert Op.OUTPUT in SHAPE_RULES
    sources = set()
    for role in Role:
        sources |= set(contract(role).inputs)
    assert sources == set(Group.SOURCE)


def test_reference_text_lists_every_operation_with_its_signature():
    text = reference_text()
    for d in REGISTRY.values():
        assert f"- {d.signature()} [" in text


@pytest.mark.parametrize("op", list(Group.COMPUTE))
def test_groups_are_derived_from_categories(op):
    d = REGISTRY[op]
    assert (op in Group.MERGE) == any(c.value == "merge" for c in d.categories)


# -- every place that acts on a group covers each of its members ------------------------
# Registering an operation in a category is all it takes; these fail naming the operation and the
# place that still leaves it out.

def _sandwich(op: Op):
    """A block Conv2d -> op -> Conv2d: the operation between two convolutions."""
    from nader.dsl.parser import parse

    text = (f"##Probe##\n0:input\n1:Conv2d(C,3)\n2:{REGISTRY[op].name}\n3:Conv2d(dim,3)\n4:output\n"
            "0->1\n1->2\n2->3\n3->4\n")
    result = parse(text)
    assert result.ok, [str(d) for d in result.diagnostics]
    return result.program.blocks[0]


@pytest.mark.parametrize("op", in_order(Group.HIDDEN_ACTIVATION), ids=str)
def test_swap_activation_turns_each_hidden_activation_into_every_other(op):
    from nader.compiler.mutate import OPERATORS

    targets = {site.args["to"] for site in OPERATORS["swap-activation"].candidates(_sandwich(op))}
    others = {REGISTRY[o].name for o in Group.HIDDEN_ACTIVATION if o is not op}
    assert targets == others, f"swap-activation turns {op} into {sorted(targets)}, not {sorted(others)}"


@pytest.mark.parametrize("op", in_order(Group.ACTIVATION | Group.REGULARIZATION), ids=str)
def test_resize_conv_sees_through_activations_and_regularization(op):
    from nader.compiler.mutate import OPERATORS

    sites = OPERATORS["resize-conv"].candidates(_sandwich(op))
    assert any(site.args["node"] == 1 for site in sites), f"resize-conv does not see through {op}"


@pytest.mark.parametrize("op", in_order(Group.HIDDEN_ACTIVATION), ids=str)
def test_naswot_reads_codes_off_each_hidden_activation(op):
    from nader.compiler.backends.torch_backend import build_torch
    from nader.search.proxies.naswot import unit_types

    module = build_torch(_sandwich(op), 4)
    units = [m for m in module.modules() if isinstance(m, unit_types())]
    assert len(units) == 1, f"NASWOT finds {len(units)} units in a block with one {op}"


def test_semantic_groups_are_what_the_ops_declare():
    for op, d in REGISTRY.items():
        assert (op in Group.COMMUTATIVE) == d.commutative, op
        assert (op in Group.FOLDABLE) == d.foldable, op
        assert (op in Group.GATE_CONSUMER) == d.multiplies, op
        assert (op in Group.VARIADIC) == (d.arity.max is None), op
        multi = d.arity.max is None or d.arity.max > 1
        assert (op in Group.ORDERED_INPUT) == (multi and not d.commutative), op
        assert (op in Group.WINDOWED) == (d.param("kernel_size") is not None), op
    # Hashes sort the inputs of commutative operations only: changing these sets changes hashes.
    assert Group.COMMUTATIVE == {Op.ADD, Op.MUL}
    assert Group.ORDERED_INPUT == {Op.CONCAT, Op.MATMUL}
    # Only multi-input operations can be commutative, foldable or apply a gate.
    assert Group.COMMUTATIVE | Group.FOLDABLE | Group.GATE_CONSUMER <= Group.MULTI_INPUT
    assert Group.VARIADIC <= Group.FOLDABLE  # the torch backend applies long merges in pieces
    assert Group.ELEMENTWISE_MERGE == Group.MERGE - Group.LAYOUT
    assert Group.WEIGHT_LAYER == Group.LEARNABLE - Group.NORMALIZATION


def test_passes_use_the_registry_groups_instead_of_sets_of_their_own():
    from nader.compiler.backends import torch_backend
    from nader.compiler.lint.rules import ungated_sigmoid
    from nader.compiler.mutate.operators import add_branch, delete_node
    from nader.compiler.passes import canonical
    assert canonical.COMMUTATIVE_OPS is Group.COMMUTATIVE
    assert canonical.ORDERED_INPUT_OPS is Group.ORDERED_INPUT
    assert torch_backend.FOLDABLE is Group.FOLDABLE
    assert delete_node._MERGES is Group.ELEMENTWISE_MERGE
    assert add_branch._BESIDE is Group.WINDOWED
    assert ungated_sigmoid._GATES is Group.GATE_CONSUMER
    from nader.compiler.passes import structure
    assert structure._LAYERS is Group.WEIGHT_LAYER
