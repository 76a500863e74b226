"""The emitted standalone source checks the block's width constraints in `__init__`, as build_torch
does, with the same text (issue 30, point 4); and `--emit onnx` errors name the file (point 3)."""
from __future__ import annotations

from fractions import Fraction

import pytest

from conftest import run_nadc
from nader.compiler.backends.source_checks import constraint_python
from nader.compiler.backends.torch_backend import BuildError, build_torch
from nader.compiler.passes.symbolic import Constraint, Poly
from nader.dsl.parser import parse

MBCONV = """##MBConv##
0:input
1:output
2:Conv2d(out_channels=4*C,kernel_size=1)
3:BN
4:ReLU
5:Conv2d(out_channels=4*C,kernel_size=3,groups=4*C)
6:Conv2d(out_channels=C//4,kernel_size=1)
7:ReLU
8:Conv2d(out_channels=C,kernel_size=1)
9:Conv2d(out_channels=C,kernel_size=1,groups=4)
10:Add
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
9->10
0->10
10->1
"""


def _classes(tmp_path, text: str, *argv: str) -> dict:
    path = tmp_path / "block.nad"
    path.write_text(text)
    run = run_nadc([str(path), "--emit", "torch", *argv])
    assert run.code == 0, run.stderr
    namespace: dict = {}
    exec(compile(run.stdout, str(path), "exec"), namespace)  # our own generated text, in a test
    return namespace


def test_the_emitted_class_refuses_the_widths_build_torch_refuses(tmp_path):
    block = parse(MBCONV, "block.nad").program.blocks[0]
    with pytest.raises(BuildError) as built:
        build_torch(block, 18)
    cls = _classes(tmp_path, MBCONV)["MBConv"]
    with pytest.raises(ValueError) as emitted:
        cls(18)
    assert str(emitted.value) == str(built.value) and "C % 4 == 0" in str(built.value)
    for width in (24, 48):  # both build
        assert sum(p.numel() for p in cls(width).parameters()) == \
            sum(p.numel() for p in build_torch(block, width).parameters())


def test_a_block_without_constraints_emits_no_check(tmp_path):
    text = "##Plain##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3)\n0->2\n2->1\n"
    path = tmp_path / "plain.nad"
    path.write_text(text)
    source = run_nadc([str(path), "--emit", "torch"]).stdout
    assert "broken" not in source
    assert _classes(tmp_path, text)["Plain"](7).C == 7


C = Poly.atom("C")


@pytest.mark.parametrize("constraint, holds", [
    (Constraint(C, 4), {4: True, 6: False}),
    (Constraint(C.scale(Fraction(1, 3)), 2), {6: True, 3: False, 4: False}),  # C/3 a multiple of 2
    (Constraint(C.scale(Fraction(1, 2)), 0), {2: True, 3: True, 1: False}),  # C/2 >= 1
])
def test_constraint_python_agrees_with_holds(constraint, holds):
    for width, expected in holds.items():
        assert eval(constraint_python(constraint), {"C": width, "dim": width}) is expected  # generated text
        assert constraint.holds({"C": width, "dim": width}) is expected


def test_onnx_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.nad"
    path.write_text("##B##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3,stride=2)\n0->2\n2->1\n")
    run = run_nadc([str(path), "--emit", "onnx", "-o", str(tmp_path / "b.onnx")])
    assert run.code == 1 and f"{path}:3:1" in run.stderr and "<string>" not in run.stderr, run.stderr
