"""Named node ids (`2a`, `conv_1`), as NADER's agents write them, through every stage."""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings

from strategies import sound_blocks, with_named_ids
from nader.compiler.passes import verify_block
from nader.compiler.passes.canonical import canonical_hash
from nader.compiler.passes.diff import block_diff
from nader.dsl import parse
from nader.dsl.format import format_block, format_source, renumber

# The kind of block GPT-4o writes in NADER's search runs (written for this test).
LLM_BLOCK = """##ResNetBranch##
0:input
1:output
2a:Conv2d(out_channels=C,kernel_size=3)
2b:BN
3a:Conv2d(out_channels=C,kernel_size=1)
3b:BN
4a:Add
5:ReLU
0->2a
2a->2b
0->3a
3a->3b
2b,3b->4a
4a->5
5->1
"""

# Terminals named too: they are known by their operation.
ALL_NAMED = """##Gate##
x:input
y:output
conv_1:Conv2d(out_channels=C,kernel_size=3)
pool:AdaptiveAvgPool2d(output_size=1)
gate:Sigmoid
mul:Mul
x->conv_1
conv_1->pool
pool->gate
conv_1,gate->mul
mul->y
"""


def block_of(text):
    result = parse(text)
    assert result.diagnostics == [], [d.message for d in result.diagnostics]
    return result.program.blocks[0]


def test_ids_are_integers_or_names():
    block = block_of(LLM_BLOCK)
    assert [n.id for n in block.nodes] == [0, 1, "2a", "2b", "3a", "3b", "4a", 5]
    assert block.edges[4].sources == ("2b", "3b") and block.edges[4].target == "4a"
    assert block_of("##A##\n007:input\n1:output\n7->1\n").nodes[0].id == 7  # digits are an integer


@pytest.mark.parametrize("text", [LLM_BLOCK, ALL_NAMED])
def test_named_blocks_verify(text):
    report = verify_block(block_of(text))
    assert report.ok, [d.message for d in report.diagnostics]


def test_the_wrong_hints_of_the_old_front_end_are_gone():
    """`2a:Conv2d(...)` once gave 21 errors, hinting `2:a:Conv2d(...)` and "`a->` instead of `->`"."""
    text = LLM_BLOCK.replace("4a->5", "4a-5")
    result = parse(text)
    assert [(d.code.code, d.help) for d in result.diagnostics] == [("NAD102", "write `4a->5`")]


def test_terminals_are_known_by_operation():
    block = block_of(ALL_NAMED)
    report = verify_block(block)
    assert report.ok
    assert block.inputs_of("y") == ["mul"]
    # Reachability, arity and terminal edges all use the operation: a named output feeding a node is NAD205.
    bad = verify_block(block_of(ALL_NAMED.replace("mul->y", "mul->y\ny->gate")))
    assert "NAD205" in {d.code.code for d in bad.diagnostics}


def test_fmt_keeps_names_and_renumber_numbers_in_topological_order():
    assert format_source(LLM_BLOCK).text == LLM_BLOCK
    renumbered = format_source(LLM_BLOCK, renumber_ids=True).text
    assert renumbered.splitlines()[1:9] == [
        "0:input", "1:output", "2:Conv2d(out_channels=C,kernel_size=3)", "3:BN",
        "4:Conv2d(out_channels=C,kernel_size=1)", "5:BN", "6:Add", "7:ReLU"]  # file order breaks ties
    assert "3,5->6" in renumbered.splitlines()
    assert all(isinstance(n.id, int) for n in renumber(block_of(ALL_NAMED)).nodes)


def test_hash_and_diff_ignore_how_ids_are_written():
    named = block_of(LLM_BLOCK)
    numbered = renumber(named)
    assert canonical_hash(named) == canonical_hash(numbered)
    assert block_diff(named, numbered).equal
    changed = block_of(LLM_BLOCK.replace("3a:Conv2d(out_channels=C,kernel_size=1)",
                                         "3a:Conv2d(out_channels=C,kernel_size=3)"))
    diff = block_diff(named, changed)
    assert [(c.a.id, c.b.id) for c in diff.changed] == [("3a", "3a")]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(sound_blocks(max_steps=5).flatmap(lambda b: with_named_ids(b).map(lambda n: (b, n))))
def test_renaming_ids_changes_neither_verdict_nor_hash(pair):
    block, named = pair
    named = parse(format_block(named)).program.blocks[0]
    block = parse(format_block(block)).program.blocks[0]
    assert verify_block(named).ok == verify_block(block).ok
    assert canonical_hash(named) == canonical_hash(block)


def test_lint_rules_skip_the_order_of_names(nadc, tmp_path):
    path = tmp_path / "b.nad"
    path.write_text(LLM_BLOCK)
    assert nadc(["lint", str(path)]).code == 0


def test_torch_source_has_readable_identifiers_and_matches_the_module(tmp_path, nadc):
    torch = pytest.importorskip("torch")
    from nader.compiler.backends.torch_backend import build_torch

    path = tmp_path / "named.nad"
    path.write_text(ALL_NAMED)
    source = nadc([str(path), "--emit", "torch"]).stdout
    ast.parse(source)
    assert "x_conv_1 = self.layers['n_conv_1'](" in source and "def forward(self, x_x):" in source
    (tmp_path / "gen.py").write_text(source)
    module = build_torch(block_of(ALL_NAMED), 8).eval()
    torch.save(module.state_dict(), tmp_path / "weights.pt")
    x = torch.randn(2, 8, 5, 5)
    torch.save(x, tmp_path / "x.pt")
    with torch.no_grad():
        expected = module(x)
    script = textwrap.dedent(f"""
        import sys
        sys.modules["nader"] = None
        sys.path.insert(0, {str(tmp_path)!r})
        import torch, gen
        torch.set_num_threads({torch.get_num_threads()})
        m = gen.Gate(8)
        m.load_state_dict(torch.load({str(tmp_path / 'weights.pt')!r}))
        m.eval()
        with torch.no_grad():
            torch.save(m(torch.load({str(tmp_path / 'x.pt')!r})), {str(tmp_path / 'y.pt')!r})
    """)
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    assert torch.equal(torch.load(tmp_path / "y.pt"), expected)


def test_onnx_agrees_with_torch_on_named_ids():
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    from nader.compiler.backends.onnx import block_to_onnx
    from nader.compiler.backends.torch_backend import build_torch

    block = block_of(LLM_BLOCK)
    module = build_torch(block, 8).eval()
    model = block_to_onnx(block, module)
    outputs = {o for n in model.graph.node for o in n.output}
    assert {"n_2a_conv2d", "n_4a_add", "n5_relu"} <= outputs
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = torch.randn(2, 8, 6, 6)
    with torch.no_grad():
        expected = module(x).numpy()
    (got,) = session.run(None, {"input": x.numpy()})
    assert abs(got - expected).max() < 1e-4


def test_drawing_names_the_nodes_by_their_ids(nadc, tmp_path):
    path = tmp_path / "named.nad"
    path.write_text(ALL_NAMED)
    dot = nadc([str(path), "--emit", "dot"]).stdout
    assert '"conv_1" -> "pool" [label="(B,C,H,H)"];' in dot  # square domain
    assert '"conv_1" [label="conv_1: Conv2d' in dot
