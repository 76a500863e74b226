"""The ONNX backend against the PyTorch backend, on the same weights.

Every model must pass `onnx.checker.check_model(full_check=True)` and strict shape
inference, and onnxruntime's output must equal the PyTorch module's (eval mode) within
1e-4 at several input sizes (an odd H among them) and batch sizes 1 and 3: the models
keep B, H and W symbolic, so one model serves every size. Blocks: the synthetic ones
of tests/onnx_cases.py (together they use every operation), the NADER compatibility
corpus (skipped when absent) and random sound blocks (hypothesis). Whole networks:
tests/test_onnx_network.py.
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
from onnx_cases import BLOCKS, TOLERANCE, dims, ort_session  # noqa: E402
from nader.compiler.backends.onnx import (  # noqa: E402
    LOWERINGS, ONNX_OPS, OnnxLoweringError, block_to_onnx, check_model, export_block, same_pads)
from nader.compiler.backends.torch_backend import build_torch  # noqa: E402
from nader.compiler.passes.contract import ANY  # noqa: E402
from nader.compiler.passes.verify import verify_block  # noqa: E402
from nader.dsl.ir import Program, Role  # noqa: E402
from nader.compiler.passes.interpreter import missing_handlers  # noqa: E402
from nader.dsl.ops import Group  # noqa: E402
from nader.dsl.block_files import parse_file  # noqa: E402
from nader.dsl.parser import parse  # noqa: E402

# (B, H, W): batch 1 and 3, odd and even, square and not.
SIZES = ((1, 16, 16), (3, 13, 11), (1, 7, 10))

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


def compare(block, module, opset: int = 17, stem_stride: int = 1, sizes=SIZES, relative: bool = False) -> float:
    """Exports, checks, runs both at every size; returns the largest absolute difference.

    The bound is TOLERANCE in absolute terms; with `relative`, TOLERANCE times the output's
    largest magnitude where that exceeds 1 (random blocks multiply tensors into large values).
    """
    model = block_to_onnx(block, module, stem_stride=stem_stride, opset=opset)
    check_model(model)
    session = ort_session(model)
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
    missing = missing_handlers(LOWERINGS)
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

def test_model_has_symbolic_batch_and_spatial_sizes():
    block = _block("strided")
    module = build(block)
    model = block_to_onnx(block, module)
    assert model.opset_import[0].version == 17 and model.opset_import[0].domain == ""
    (inp,) = model.graph.input
    assert dims(inp) == ["B", module.in_channels, "H", "W"]
    (out,) = model.graph.output
    assert out.name == "output"
    assert dims(out) == ["B", 2 * module.in_channels, "ceil(H/2)", "ceil(W/2)"]
    props = {p.key: p.value for p in model.metadata_props}
    assert props["nader.block"] == "Strided_downsample" and props["nader.role"] == "downsample"
    inferred = check_model(model)
    annotated = {v.name: dims(v) for v in inferred.graph.value_info}
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
    check_model(model)
    assert dims(model.graph.input[0])[2:] == [12, 12]
    assert dims(model.graph.output[0])[2:] == [6, 6]


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
    check_model(model)
    assert dims(model.graph.input[0]) == ["B", 24, "H", "H"]  # the default domain: square inputs
    again = tmp_path / "b.onnx"
    assert run_nadc([str(src), "--emit", "onnx", "-o", str(again), "--in-channels", "24"]).code == 0
    assert out.read_bytes() == again.read_bytes()  # seeded: reproducible
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(again), "--in-channels", "24", "--domain", "any"])
    assert run.code == 0, run.stderr
    assert dims(onnx.load(str(again)).graph.input[0]) == ["B", 24, "H", "W"]


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
    assert dims(onnx.load(str(out)).graph.input[0]) == ["B", 96, "H", "H"]
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out), "--in-channels", "64"])
    assert run.code == 1 and "C % 96 == 0" in run.stderr


def test_nadc_stem_width_comes_from_widths(tmp_path):
    src, out = _write(tmp_path, "stem3"), tmp_path / "s.onnx"
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out), "--stem-stride", "3", "--widths", "24,48"])
    assert run.code == 0, run.stderr
    model = onnx.load(str(out))
    assert dims(model.graph.input[0]) == ["B", 3, "H", "H"]
    assert dims(model.graph.output[0]) == ["B", 24, "ceil(H/3)", "ceil(H/3)"]


def test_nadc_reports_unbuildable_blocks_without_a_traceback(tmp_path):
    src, out = tmp_path / "bad.nad", tmp_path / "x.onnx"
    src.write_text("##Bad##\n0:input\n1:output\n2:Conv2d(out_channels=C*2,kernel_size=3)\n0->2\n2->1\n")
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out)])
    assert run.code == 1
    assert "nadc: error:" in run.stderr and "Traceback" not in run.stderr
    src2 = _write(tmp_path, "layout")
    run = run_nadc([str(src2), "--emit", "onnx", "-o", str(out), "--in-channels", "7"])
    assert run.code == 1 and "C % 2 == 0" in run.stderr and "Traceback" not in run.stderr
