"""The ONNX backend against the PyTorch backend, on the same weights.

Every model must pass `onnx.checker.check_model(full_check=True)` and strict shape
inference, and onnxruntime's output must equal the PyTorch module's (eval mode) within
1e-4 at several input sizes (an odd H among them) and batch sizes 1 and 3: the models
keep B, H and W symbolic, so one model serves every size. Blocks: the synthetic ones
below (together they use every operation), the NADER compatibility corpus (skipped
when absent) and random sound blocks (hypothesis).
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from conftest import run_nadc, shared_dir  # noqa: E402
from nader.compiler.backends.onnx import (  # noqa: E402
    LAYER_LOWERINGS, LOWERINGS, ONNX_OPS, OnnxLoweringError, block_to_onnx, build_for_export, check, export_block,
    network_to_onnx, same_pads)
from nader.compiler.backends.torch_backend import build_torch  # noqa: E402
from nader.compiler.passes.contract import ANY  # noqa: E402
from nader.compiler.passes.verify import verify_block  # noqa: E402
from nader.dsl.ir import Program, Role  # noqa: E402
from nader.dsl.ops import Group  # noqa: E402
from nader.dsl.parser import parse, parse_file  # noqa: E402

TOLERANCE = 1e-4
# (B, H, W): batch 1 and 3, odd and even, square and not.
SIZES = ((1, 16, 16), (3, 13, 11), (1, 7, 10))

# Blocks that together use every operation, with the stem stride they are verified at.
BLOCKS = {
"pools_gates": ("""##PoolsGates##
0:input
1:output
2:AdaptiveAvgPool2d(output_size=(3,2))
3:AdaptiveMaxPool2d(output_size=1)
4:mean(dim=(2,3))
5:Add
6:Sigmoid
7:Mul
8:max(dim=1)
9:AdaptiveMaxPool2d(output_size=(1,2))
10:sum(dim=(-1,-2))
11:AdaptiveAvgPool2d(output_size=1)
12:Add
0->2
0->3
2->4
3->5
4->5
3->5
5->6
0->7
6->7
6->7
7->8
0->9
9->10
0->11
7->12
8->12
10->12
11->12
12->1
""", 1),
"padding": ("""##Padding##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=2,stride=1)
3:Conv2d(out_channels=C,kernel_size=(1,4),stride=1)
4:AvgPool2d(kernel_size=2,stride=1)
5:MaxPool2d(kernel_size=4,stride=1)
6:Conv2d(out_channels=C,kernel_size=2,stride=1,dilation=3,groups=C)
7:concat(dim=-3)
8:Conv2d(out_channels=C,kernel_size=1)
9:AvgPool2d(kernel_size=(3,2),stride=1)
10:GELU
11:DropPath(prob=0.3)
12:Zero
13:Add
0->2
0->3
0->4
0->5
0->6
2->7
3->7
4->7
5->7
6->7
9->7
0->9
7->8
8->10
10->11
8->12
11->13
12->13
13->1
""", 1),
"strided": ("""##Strided_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=4,stride=2)
3:AvgPool2d(kernel_size=3,stride=2)
4:MaxPool2d(kernel_size=2,stride=2)
5:concat(dim=1)
6:Add
7:Conv2d(out_channels=C,kernel_size=(2,3),stride=(2,2),dilation=(1,2))
8:AvgPool2d(kernel_size=4,stride=2)
9:concat(dim=1)
10:Add
0->2
0->3
0->4
3->5
4->5
2->6
5->6
0->7
0->8
7->9
8->9
6->10
9->10
10->1
""", 1),
"stem3": ("""##Odd_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=4,stride=3)
3:AvgPool2d(kernel_size=2,stride=3)
4:MaxPool2d(kernel_size=5,stride=3)
5:Conv2d(out_channels=dim,kernel_size=1)
6:Add
7:ReLU
8:Conv2d(out_channels=dim,kernel_size=1)
0->2
0->3
0->4
3->5
4->8
2->6
5->6
8->6
6->7
7->1
""", 3),
"layout": ("""##Layout##
0:input
1:output
2:mean(dim=1)
3:repeat(1,C,1,1)
4:reshape(B,C,-1)
5:softmax(dim=2)
6:reshape(B,C,H*W//W,-1)
7:repeat(2,1,1,1,1)
8:sum(dim=0)
9:reshape(B,C,H,W)
10:Mul
11:repeat(1,1,H,1)
12:mean(dim=2)
13:Add
14:reshape(B*H,C/2,2*W)
15:permute(0,-1,1)
16:reshape(B,H,2,W,C/2)
17:permute(0,2,4,1,3)
18:reshape(B,C,H,W)
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
0->10
9->10
0->11
11->12
10->13
12->13
13->14
14->15
15->16
16->17
17->18
18->1
""", 1),
"attention": ("""##Attention##
0:input
1:output
2:reshape(B,C,H*W)
3:permute(0,2,1)
4:LN
5:Linear(out_channels=C)
6:Linear(out_channels=C)
7:permute(0,2,1)
8:multiply
9:softmax(dim=-1)
10:GELU
11:multiply
12:permute(0,2,1)
13:reshape(B,C,H,W)
14:Add
0->2
2->3
3->4
4->5
4->6
6->7
5->8
7->8
8->9
4->10
10->11
9->11
11->12
12->13
13->14
0->14
14->1
""", 1),
"squeeze_excite": ("""##SqueezeExcite##
0:input
1:output
2:AdaptiveAvgPool2d(output_size=1)
3:reshape(B,C)
4:Linear(out_channels=C/4)
5:ReLU
6:Linear(out_channels=C)
7:Sigmoid
8:reshape(B,C,1,1)
9:Mul
10:BN
0->2
2->3
3->4
4->5
5->6
6->7
7->8
0->9
8->9
9->10
10->1
""", 1),
"cell": ("""##MixCell##
0:input1
1:input2
2:output
3:Conv2d(out_channels=C,kernel_size=3)
4:BN
5:ReLU
6:Mul
7:concat(dim=1)
8:Conv2d(out_channels=C,kernel_size=1,groups=C/2)
9:permute(0,2,3,1)
10:Linear(out_channels=C)
11:permute(0,3,1,2)
0->3
3->4
4->5
5->6
1->6
6->7
1->7
7->8
8->9
9->10
10->11
11->2
""", 1),
}


# Architectures (base block, stem, downsample block / reduction cell) for network export.
STAGED_ARCH = """##Gated##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3)
3:BN
4:ReLU
5:AdaptiveAvgPool2d(output_size=1)
6:Conv2d(out_channels=C/4,kernel_size=1)
7:ReLU
8:Conv2d(out_channels=C,kernel_size=1)
9:Sigmoid
10:Mul
11:Add
0->2
2->3
3->4
4->5
5->6
6->7
7->8
8->9
4->10
9->10
10->11
0->11
11->1
##Gated_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3)
3:BN
4:ReLU
0->2
2->3
3->4
4->1
##Gated_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=2,stride=2)
3:BN
4:AvgPool2d(kernel_size=3,stride=2)
5:Conv2d(out_channels=dim,kernel_size=1)
6:Add
0->2
2->3
0->4
4->5
3->6
5->6
6->1
"""

IMAGENET_STEM = """##Gated_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=4,stride=4)
3:LN
4:permute(0,2,3,1)
5:permute(0,3,1,2)
0->2
2->4
4->3
3->5
5->1
"""

DARTS_ARCH = """##Tiny##
0:input1
1:input2
2:output
3:ReLU
4:Conv2d(out_channels=C,kernel_size=3,groups=C)
5:BN
6:MaxPool2d(kernel_size=3,stride=1)
7:Add
8:concat(dim=1)
9:Conv2d(out_channels=C,kernel_size=1)
0->3
3->4
4->5
1->6
5->7
6->7
7->8
1->8
8->9
9->2
##Tiny_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3)
3:BN
0->2
2->3
3->1
##Tiny_downsample##
0:input1
1:input2
2:output
3:MaxPool2d(kernel_size=3,stride=2)
4:AvgPool2d(kernel_size=2,stride=2)
5:Add
6:Conv2d(out_channels=C,kernel_size=3,stride=2)
7:Add
0->3
1->4
3->5
4->5
1->6
5->7
6->7
7->2
"""


# -- helpers ---------------------------------------------------------------------------------

def _stem_stride(path: Path) -> int:
    name = path.name
    return 4 if name.startswith("blocks__") or "_forRes50" in name else 1


def _width(report) -> int:
    """The smallest width (a multiple of 8) that meets the block's width constraints."""
    shapes = report.shapes
    for c in range(8, 1025, 8):
        sizes = shapes.sizes(c, out_width=16 if report.role is Role.STEM else None)
        if all(k.holds(sizes) for k in shapes.constraints if k.size.free_symbols() <= {"C", "dim"}):
            return c
    raise AssertionError(f"no width up to 1024 fits {report.constraints}")


def _randomize(module) -> None:
    """Non-trivial BN statistics and affine parameters, so BN lowering is really compared."""
    for layer in module.layers.values():
        if isinstance(layer, torch.nn.BatchNorm2d):
            layer.running_mean.uniform_(-0.5, 0.5)
            layer.running_var.uniform_(0.5, 2.0)
        if isinstance(layer, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
            layer.weight.data.uniform_(0.5, 1.5)
            layer.bias.data.uniform_(-0.5, 0.5)


def build(block, stem_stride: int = 1, seed: int = 0, domain=ANY):
    """The block's module, verified in `domain`: `any` by default, so that it runs at the non-square SIZES."""
    report = verify_block(block, stem_stride=stem_stride, domain=domain)
    assert report.ok, [d.message for d in report.diagnostics]
    torch.manual_seed(seed)
    if report.role is Role.STEM:
        module = build_torch(block, 3, 16, stem_stride=stem_stride, report=report)
    else:
        module = build_torch(block, _width(report), stem_stride=stem_stride, report=report)
    _randomize(module)
    return module.eval()


def _session(model):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def compare(block, module, opset: int = 17, stem_stride: int = 1, sizes=SIZES, relative: bool = False) -> float:
    """Exports, checks, runs both at every size; returns the largest absolute difference.

    The bound is TOLERANCE in absolute terms; with `relative`, TOLERANCE times the output's
    largest magnitude where that exceeds 1 (random blocks multiply tensors into large values).
    """
    model = block_to_onnx(block, module, stem_stride=stem_stride, opset=opset)
    check(model)
    session = _session(model)
    names = [i.name for i in session.get_inputs()]
    assert names == (["input1", "input2"] if module.role in (Role.CELL, Role.REDUCTION_CELL) else ["input"])
    shapes = module.report.shapes
    worst = 0.0
    tried = 0
    generator = torch.Generator().manual_seed(1)
    for b, h, w in sizes:
        if not shapes.satisfied({"B": b, "H": h, "W": w, "C": module.in_channels, "dim": module.out_channels}):
            continue
        tried += 1
        xs = [torch.randn(b, module.in_channels, h, w, generator=generator) for _ in names]
        with torch.no_grad():
            expected = module(*xs).numpy()
        (got,) = session.run(None, {n: x.numpy() for n, x in zip(names, xs)})
        assert got.shape == expected.shape, (block.name, (b, h, w), got.shape, expected.shape)
        scale = max(1.0, float(np.abs(expected).max())) if relative else 1.0
        worst = max(worst, float(np.abs(got - expected).max()) / scale)
    assert tried >= 2, f"{block.name}: fewer than two test sizes meet {module.report.constraints}"
    assert worst <= TOLERANCE, f"{block.name}: max |onnx - torch| = {worst:.3g}{' (relative)' if relative else ''} at opset {opset}"
    return worst


def _block(name: str):
    text, _ = BLOCKS[name]
    parsed = parse(text)
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    return parsed.program.blocks[0]


def _corpus_files() -> list:
    shared = shared_dir()
    if shared is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason="NADER compatibility corpus not found"))]
    return sorted((shared / "nader-compat" / "blocks").glob("*.txt"), key=lambda p: p.name)


# -- the lowering table ----------------------------------------------------------------------

def test_every_operation_has_an_onnx_lowering():
    missing = sorted(str(op) for op in Group.COMPUTE if op not in LOWERINGS)
    assert not missing, f"operations without an ONNX lowering: {missing}"
    assert not set(LOWERINGS) & Group.TERMINAL
    assert set(ONNX_OPS) == set(LOWERINGS)


def test_synthetic_blocks_use_every_operation():
    used = {node.op for name in BLOCKS for node in _block(name).nodes}
    assert Group.COMPUTE <= used, sorted(str(op) for op in Group.COMPUTE - used)


# -- "same" padding --------------------------------------------------------------------------

def _semantic_windows(h: int, k: int, s: int, d: int) -> list[int]:
    """Window starts per docs/semantics.md: pad k'//2 both sides, slide, crop to ceil(h/s)."""
    eff = d * (k - 1) + 1
    p = eff // 2
    count = (h + 2 * p - eff) // s + 1
    return [i * s - p for i in range(count)][: -(-h // s)]


def _onnx_windows(h: int, k: int, s: int, d: int) -> list[int]:
    begin, end = same_pads(k, s, d)
    eff = d * (k - 1) + 1
    count = (h + begin + end - eff) // s + 1
    return [i * s - begin for i in range(count)]


@pytest.mark.parametrize("k,s,d", list(itertools.product(range(1, 8), range(1, 5), range(1, 4))))
def test_static_pads_equal_same_padding_for_every_size(k, s, d):
    for h in range(1, 40):
        assert _onnx_windows(h, k, s, d) == _semantic_windows(h, k, s, d), (h, k, s, d)
        assert len(_onnx_windows(h, k, s, d)) == -(-h // s)


def test_same_pads_examples():
    assert same_pads(3, 1) == (1, 1)
    assert same_pads(2, 1) == (1, 0)
    assert same_pads(2, 2) == (1, 0)
    assert same_pads(4, 2) == (2, 1)
    assert same_pads(1, 2) == (0, 0)
    assert same_pads(3, 1, 2) == (2, 2)  # k' = 5
    assert same_pads(2, 1, 3) == (2, 1)  # k' = 4


# -- parity with PyTorch -----------------------------------------------------------------------

@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("name", list(BLOCKS))
def test_synthetic_block_matches_torch(name, opset):
    block = _block(name)
    stem_stride = BLOCKS[name][1]
    compare(block, build(block, stem_stride), opset=opset, stem_stride=stem_stride)


@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.stem if p else "corpus")
def test_corpus_blocks_match_torch(path):
    parsed = parse_file(str(path))
    assert parsed.program.blocks
    stem_stride = _stem_stride(path)
    for block in parsed.program.blocks:
        compare(block, build(block, stem_stride), stem_stride=stem_stride)


def _sound_blocks():
    from strategies import sound_blocks

    from nader.dsl.format import format_program

    return sound_blocks(max_steps=6).map(lambda b: parse(format_program(Program((b,)))).program.blocks[0])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(block=_sound_blocks())
def test_random_sound_blocks_match_torch(block):
    report = verify_block(block)
    if not report.ok:
        return  # the strategy aims at valid blocks; the verifier's own tests cover the rest
    compare(block, build(block), sizes=((1, 9, 8), (3, 6, 5)), relative=True)


# -- the model -----------------------------------------------------------------------------------

def _dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_model_has_symbolic_batch_and_spatial_sizes():
    block = _block("strided")
    module = build(block)
    model = block_to_onnx(block, module)
    assert model.opset_import[0].version == 17 and model.opset_import[0].domain == ""
    (inp,) = model.graph.input
    assert _dims(inp) == ["B", module.in_channels, "H", "W"]
    (out,) = model.graph.output
    assert out.name == "output"
    assert _dims(out) == ["B", 2 * module.in_channels, "ceil(H/2)", "ceil(W/2)"]
    props = {p.key: p.value for p in model.metadata_props}
    assert props["nader.block"] == "Strided_downsample" and props["nader.role"] == "downsample"
    inferred = check(model)
    annotated = {v.name: _dims(v) for v in inferred.graph.value_info}
    assert annotated["n2_conv2d"] == ["B", 2 * module.in_channels, "ceil(H/2)", "ceil(W/2)"]


def test_every_node_of_the_block_appears_in_the_graph():
    """The graph is built from the IR: each computing node yields a tensor named after its id."""
    for name in BLOCKS:
        block = _block(name)
        model = block_to_onnx(block, build(block, BLOCKS[name][1]), stem_stride=BLOCKS[name][1])
        outputs = {o for n in model.graph.node for o in n.output}
        for node in block.nodes:
            if node.op in Group.COMPUTE:
                assert f"n{node.id}_{str(node.op).lower()}" in outputs, (name, node.id)


def test_lowering_choices():
    def ops(name, opset=17):
        block = _block(name)
        model = block_to_onnx(block, build(block, BLOCKS[name][1]), stem_stride=BLOCKS[name][1], opset=opset)
        return model, [n.op_type for n in model.graph.node]

    model, types = ops("padding")
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    pads = {n.output[0]: list(next(a.ints for a in n.attribute if a.name == "pads")) for n in convs}
    assert pads["n2_conv2d"] == [1, 1, 0, 0]  # k=2: begin 1, end 0
    assert pads["n3_conv2d"] == [0, 2, 0, 1]  # (1,4)
    assert pads["n6_conv2d"] == [2, 2, 1, 1]  # k=2, dilation 3: k'=4
    avg = next(n for n in model.graph.node if n.op_type == "AveragePool")
    assert next(a.i for a in avg.attribute if a.name == "count_include_pad") == 0
    assert "Gelu" not in types and "Erf" in types  # opset 17: the erf formula
    assert "Gelu" in ops("padding", 20)[1]
    _, types = ops("squeeze_excite")
    assert "Gemm" in types and "GlobalAveragePool" in types
    _, types = ops("pools_gates")
    assert {"GlobalMaxPool", "Slice", "Sum"} <= set(types)
    model, types = ops("attention")
    matmuls = [n for n in model.graph.node if n.op_type == "MatMul" and n.output[0] == "n11_multiply"]
    assert list(matmuls[0].input) == ["n9_softmax", "n10_gelu"]  # swapped (NAD304)


def test_input_size_fixes_the_spatial_sizes():
    block = _block("strided")
    model = block_to_onnx(block, build(block), input_size=12)
    check(model)
    assert _dims(model.graph.input[0])[2:] == [12, 12]
    assert _dims(model.graph.output[0])[2:] == [6, 6]


def test_errors_are_reported_not_raised_as_tracebacks():
    block = _block("layout")  # needs C % 2 == 0
    module = build(block)
    with pytest.raises(OnnxLoweringError, match="C % 2 == 0"):
        export_block(block, in_channels=7)
    with pytest.raises(OnnxLoweringError, match="built at C="):
        block_to_onnx(block, module, in_channels=module.in_channels + 2)
    with pytest.raises(OnnxLoweringError, match="opset"):
        block_to_onnx(block, module, opset=11)
    with pytest.raises(OnnxLoweringError, match="does not verify"):
        bad = parse("##Bad##\n0:input\n1:output\n2:Conv2d(out_channels=C*2,kernel_size=3)\n0->2\n2->1\n").program.blocks[0]
        export_block(bad)


# -- the command line ----------------------------------------------------------------------------

def _write(tmp_path, name):
    path = tmp_path / f"{name}.nad"
    path.write_text(BLOCKS[name][0])
    return path


def test_nadc_emits_a_checked_model(tmp_path):
    src, out = _write(tmp_path, "attention"), tmp_path / "a.onnx"
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out), "--in-channels", "24"])
    assert run.code == 0, run.stderr
    model = onnx.load(str(out))
    check(model)
    assert _dims(model.graph.input[0]) == ["B", 24, "H", "H"]  # the default domain: square inputs
    again = tmp_path / "b.onnx"
    assert run_nadc([str(src), "--emit", "onnx", "-o", str(again), "--in-channels", "24"]).code == 0
    assert out.read_bytes() == again.read_bytes()  # seeded: reproducible
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(again), "--in-channels", "24", "--domain", "any"])
    assert run.code == 0, run.stderr
    assert _dims(onnx.load(str(again)).graph.input[0]) == ["B", 24, "H", "W"]


def test_nadc_exports_the_first_of_several_blocks_with_a_note(tmp_path):
    src, out = tmp_path / "three.nad", tmp_path / "m.onnx"
    src.write_text(BLOCKS["squeeze_excite"][0] + "\n" + BLOCKS["strided"][0] + "\n" + BLOCKS["stem3"][0])
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out)])
    assert run.code == 0, run.stderr
    assert "first block `SqueezeExcite`" in run.stderr and "Strided_downsample" in run.stderr
    model = onnx.load(str(out))
    assert {p.key: p.value for p in model.metadata_props}["nader.block"] == "SqueezeExcite"


def test_nadc_default_width_meets_the_constraints(tmp_path):
    src, out = tmp_path / "g.nad", tmp_path / "g.onnx"
    src.write_text(BLOCKS["padding"][0].replace("groups=C)", "groups=96)"))  # needs C % 96 == 0
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out)])
    assert run.code == 0, run.stderr
    assert _dims(onnx.load(str(out)).graph.input[0]) == ["B", 96, "H", "H"]
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out), "--in-channels", "64"])
    assert run.code == 1 and "C % 96 == 0" in run.stderr


def test_nadc_stem_width_comes_from_widths(tmp_path):
    src, out = _write(tmp_path, "stem3"), tmp_path / "s.onnx"
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out), "--stem-stride", "3", "--widths", "24,48"])
    assert run.code == 0, run.stderr
    model = onnx.load(str(out))
    assert _dims(model.graph.input[0]) == ["B", 3, "H", "H"]
    assert _dims(model.graph.output[0]) == ["B", 24, "ceil(H/3)", "ceil(H/3)"]


def test_nadc_reports_unbuildable_blocks_without_a_traceback(tmp_path):
    src, out = tmp_path / "bad.nad", tmp_path / "x.onnx"
    src.write_text("##Bad##\n0:input\n1:output\n2:Conv2d(out_channels=C*2,kernel_size=3)\n0->2\n2->1\n")
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out)])
    assert run.code == 1
    assert "nadc: error:" in run.stderr and "Traceback" not in run.stderr
    src2 = _write(tmp_path, "layout")
    run = run_nadc([str(src2), "--emit", "onnx", "-o", str(out), "--in-channels", "7"])
    assert run.code == 1 and "C % 2 == 0" in run.stderr and "Traceback" not in run.stderr


# -- networks ------------------------------------------------------------------------------------

def _imagenet_arch() -> str:
    base, rest = STAGED_ARCH.split("##Gated_stem##")
    return base + IMAGENET_STEM + "##Gated_downsample##" + rest.split("##Gated_downsample##")[1]


NETWORKS = {
    "nb201": (lambda: STAGED_ARCH, dict(widths=(8,))),
    "nas-bench-201": (lambda: STAGED_ARCH, dict(widths=(8,), depths=(1, 1, 1))),  # with its BN-ReLU before pooling
    "imagenet": (_imagenet_arch, dict(widths=(8,), depths=(1, 1, 1, 1))),
    "darts": (lambda: DARTS_ARCH, dict(widths=(8,), depths=(1, 1, 1))),
}


def _randomize_network(module) -> None:
    for layer in module.modules():
        if isinstance(layer, torch.nn.BatchNorm2d):
            layer.running_mean.uniform_(-0.3, 0.3)
            layer.running_var.uniform_(0.5, 2.0)
            layer.weight.data.uniform_(0.5, 1.5)
            layer.bias.data.uniform_(-0.3, 0.3)


def compare_network(model, module, sizes) -> float:
    check(model)
    session = _session(model)
    generator = torch.Generator().manual_seed(2)
    worst = 0.0
    for b, h, w in sizes:
        x = torch.randn(b, 3, h, w, generator=generator)
        with torch.no_grad():
            expected = module(x).numpy()
        (got,) = session.run(None, {"input": x.numpy()})
        assert got.shape == expected.shape
        worst = max(worst, float(np.abs(got - expected).max()))
    assert worst <= TOLERANCE, f"max |onnx - torch| = {worst:.3g}"
    return worst


def _network(skeleton: str, text: str, **options):
    built = build_for_export(parse(text), skeleton=skeleton, **options)
    torch.manual_seed(3)
    _randomize_network(built.module)
    return network_to_onnx(built.arch, built.plan, built.module.state_dict()), built.module, built.info


@pytest.mark.parametrize("skeleton", list(NETWORKS))
def test_network_matches_torch(skeleton):
    text, options = NETWORKS[skeleton]
    model, module, info = _network(skeleton, text(), **options)
    # Input sizes the skeleton was planned for and others: the model is dynamic in B, H, W.
    compare_network(model, module, ((1, 32, 32), (3, 17, 17), (1, 24, 19)))
    assert _dims(model.graph.input[0]) == ["B", 3, "H", "W"]
    assert _dims(model.graph.output[0]) == ["B", info["num_classes"]]


def test_darts_network_uses_factorized_reduce_at_odd_sizes():
    model, module, _ = _network("darts", DARTS_ARCH, widths=(8,), depths=(1, 1, 1))
    assert any("preprocess0.conv_1" in n.output[0] for n in model.graph.node)
    compare_network(model, module, ((2, 9, 11), (1, 1, 2)))  # H = 1: an empty slice, then the end pad


def test_every_skeleton_layer_kind_has_a_lowering():
    from nader.compiler.plan import LAYER_KINDS

    assert set(LAYER_LOWERINGS) == set(LAYER_KINDS)


@pytest.mark.parametrize("skeleton", list(NETWORKS))
def test_plan_units_are_the_module_paths_of_the_built_network(skeleton):
    """ONNX reads each unit's weights under its plan name: every name must be a module of the network."""
    text, options = NETWORKS[skeleton]
    built = build_for_export(parse(text()), skeleton=skeleton, **options)
    modules = dict(built.module.named_modules())
    units = list(built.plan.units())
    assert {"stem", "fc"} <= {u.name for u in units}
    for unit in units:
        assert unit.name in modules, unit.name
    covered = {k for k in built.module.state_dict() if any(k.startswith(f"{u.name}.") for u in units)}
    assert covered == set(built.module.state_dict())  # no weight lies outside the plan

@pytest.mark.parametrize("name,skeleton", [("nas-bench-201__nasbench201_cifar100_optimal", "nb201"),
                                           ("darts__dartsv2", "darts")])
def test_corpus_networks_match_torch(compat_dir, name, skeleton):
    text = (compat_dir / "blocks" / f"{name}.txt").read_text()
    depths = (2, 2, 2) if skeleton == "nb201" else (1, 1, 1)
    model, module, _ = _network(skeleton, text, widths=(8,), depths=depths)
    compare_network(model, module, ((1, 32, 32), (3, 17, 17)))


def test_nadc_emits_a_network(tmp_path):
    src, out = tmp_path / "arch.nad", tmp_path / "net.onnx"
    src.write_text(DARTS_ARCH)
    run = run_nadc([str(src), "--emit", "onnx", "--network", "darts", "--widths", "8", "--depths", "1,1,1",
                    "-o", str(out)])
    assert run.code == 0, run.stderr
    model = onnx.load(str(out))
    check(model)
    props = {p.key: p.value for p in model.metadata_props}
    assert props["nader.skeleton"] == "darts" and props["nader.widths"] == "8,16,32"
    run = run_nadc([str(src), "--emit", "onnx", "--network", "nb201", "-o", str(out)])
    assert run.code == 1 and "darts" in run.stderr and "Traceback" not in run.stderr


def _corpus_skeleton(name: str) -> tuple[str, str]:
    """(skeleton, dataset) NADER used for a corpus architecture file."""
    if name.startswith("darts__"):
        return "darts", "cifar10"
    if name.startswith(("blocks__", "blocks-cifar__")):
        return "imagenet", "cifar100"
    return "nb201", "cifar100"


def test_every_corpus_architecture_fits_builds_and_matches_onnx(compat_dir):
    """Issue 4's bar: every compatibility architecture fits its budget, builds, and PyTorch == ONNX."""
    from nader.compiler.fit import preset_budget
    from nader.compiler.network import analyze, build_network

    files = sorted((compat_dir / "blocks").glob("*.txt"))
    assert len(files) == 30
    worst = 0.0
    for path in files:
        skeleton, dataset = _corpus_skeleton(path.name)
        text = path.read_text()
        info = analyze(text, skeleton, dataset)  # fits the preset budget
        budget = preset_budget(skeleton, dataset, info["depths"])
        assert info["params"] <= budget.params, path.name
        assert budget.flops is None or info["flops"] <= budget.flops, path.name
        module, built = build_network(text, skeleton, dataset, widths=info["widths"], depths=info["depths"])
        assert sum(p.numel() for p in module.parameters()) == info["params"], path.name
        # Lowering agreement does not depend on width: compare at small widths and depths, odd sizes too.
        depths = tuple(1 for _ in info["depths"])
        multipliers = [w // info["widths"][0] for w in info["widths"]]
        for base in (8, 16, 32, 64, 128):  # the smallest width the blocks' constraints allow
            try:
                model, net, _ = _network(skeleton, text, widths=tuple(base * m for m in multipliers), depths=depths)
                break
            except OnnxLoweringError:
                continue
        else:
            pytest.fail(f"{path.name}: no small width builds")
        worst = max(worst, compare_network(model, net, ((1, 32, 32), (2, 19, 23))))
    assert worst <= TOLERANCE
