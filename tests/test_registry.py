"""Every registered operation has a rule in every table that hangs on the registry."""
import pytest

from nader.dsl.ops import REGISTRY, Group, Op, reference_text


def test_every_compute_op_has_a_shape_rule():
    from nader.compiler.passes.shapes import SHAPE_RULES
    missing = [op for op in Group.COMPUTE if op not in SHAPE_RULES]
    assert not missing, f"operations without a shape rule: {missing}"


def test_every_compute_op_has_a_torch_lowering():
    from nader.compiler.backends.torch_backend import LOWERINGS
    missing = [op for op in Group.COMPUTE if op not in LOWERINGS]
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
