"""Size domains, resolution-bound layers, dead nodes and architectures of a base block alone.

The blocks here are the kinds NADER's own pipeline built and trained and that a proof for
every H and W rejects: attention-style products of two (B,C,H,W) maps, sums with a transposed
map, `LN` over a spatial axis. They verify in the default (square) domain, are rejected with
their reasons under `--domain any`, and build into networks whose ONNX export agrees with PyTorch.
"""
from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
import torch

from conftest import run_nadc
from nader.compiler.backends.onnx import export_network
from nader.compiler.backends.torch_backend import BuildError as TorchBuildError
from nader.compiler.backends.torch_backend import build_torch
from nader.compiler.network import BuildError, analyze, build_network
from nader.compiler.passes import ANY, SQUARE, fixed, parse_domain, verify_block
from nader.compiler.passes.cost import block_cost
from nader.dsl import parse

ATTENTION = """##Attention##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=1)
3:Conv2d(out_channels=C,kernel_size=1)
4:multiply
5:softmax(dim=-1)
6:Conv2d(out_channels=C,kernel_size=1)
7:multiply
8:Add
0->2
0->3
2->4
3->4
4->5
0->6
5->7
6->7
7->8
0->8
8->1
"""
TRANSPOSED_SUM = """##TransposedSum##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3)
3:permute(0,1,3,2)
4:Add
0->2
2->3
0,3->4
4->1
"""
# LN over ceil(W/2) after a stride-2 convolution, brought back to (B,C,H,W).
NORM_OVER_WIDTH = """##NormOverWidth##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=2)
3:LN
4:repeat(1,1,2,2)
5:Add
0->2
2->3
3->4
4->5
0->5
5->1
"""
# Channel attention whose `Linear` mixes the H*W pixels of each channel.
LINEAR_OVER_PIXELS = """##PixelMix##
0:input
1:output
2:reshape(B,C,H*W)
3:Linear(out_channels=C)
4:softmax(dim=-1)
5:multiply
6:reshape(B,C,H,W)
7:Add
0->2
2->3
3->4
4->5
2->5
5->6
6->7
0->7
7->1
"""
SQUARE_ONLY = {"attention": (ATTENTION, "NAD303"), "transposed": (TRANSPOSED_SUM, "NAD301"),
               "norm_over_width": (NORM_OVER_WIDTH, "NAD310"), "linear_over_pixels": (LINEAR_OVER_PIXELS, "NAD310")}


def block(text: str):
    parsed = parse(text)
    assert parsed.ok, parsed.diagnostics
    return parsed.program.blocks[0]


def codes(report) -> list[str]:
    return [d.code.code for d in report.diagnostics]


# -- domains -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SQUARE_ONLY))
def test_square_only_blocks_verify_by_default_and_are_rejected_for_any_size(name):
    text, code = SQUARE_ONLY[name]
    square = verify_block(block(text))
    assert square.ok and square.domain is SQUARE, [d.message for d in square.diagnostics]
    anywhere = verify_block(block(text), domain=ANY)
    assert not anywhere.ok
    errors = [d for d in anywhere.diagnostics if d.is_error]
    assert errors[0].code.code == code
    assert "W" in errors[0].message  # the reason names the size that differs


def test_the_cli_states_the_domain_and_rejects_with_reasons(tmp_path):
    src = tmp_path / "blocks.nad"
    src.write_text(ATTENTION + TRANSPOSED_SUM + NORM_OVER_WIDTH)
    square = run_nadc(["verify", str(src), "--format", "json", "--shapes"])
    assert square.code == 0, square.stdout
    objects = json.loads(square.stdout)
    assert [(o["domain"], o["ok"]) for o in objects] == [("square", True)] * 3
    assert [d["code"] for d in objects[2]["diagnostics"]] == ["NAD317"]  # resolution-bound: a warning
    assert objects[2]["constraints"] == ["H % 2 == 0"] and objects[2]["shapes"]["3"] == ["B", "C", "ceil(H/2)",
                                                                                          "ceil(H/2)"]
    anywhere = run_nadc(["verify", str(src), "--domain", "any", "--format", "concise"])
    assert anywhere.code == 1
    assert "NAD303" in anywhere.stdout and "NAD301" in anywhere.stdout and "NAD310" in anywhere.stdout
    assert "in the `any` domain one module must run at every H and W" in anywhere.stdout
    fixed_size = run_nadc(["verify", str(src), "--domain", "16", "--format", "json"])
    assert fixed_size.code == 0 and {o["domain"] for o in json.loads(fixed_size.stdout)} == {"16x16"}
    bad = run_nadc(["verify", str(src), "--domain", "round"])
    assert bad.code == 2 and "Traceback" not in bad.stderr


def test_parse_domain():
    assert parse_domain("square") is SQUARE and parse_domain("ANY") is ANY
    assert parse_domain("32") == fixed(32) == parse_domain("32x32")
    for text in ("32x16", "0", "wide", ""):
        with pytest.raises(ValueError):
            parse_domain(text)


def test_a_fixed_resolution_decides_what_holds_only_at_some_sizes():
    """`AdaptiveAvgPool2d(8)` added to the input: valid at 8x8 only."""
    text = "##Pooled##\n0:input\n1:output\n2:AdaptiveAvgPool2d(output_size=8)\n3:Add\n0->2\n0,2->3\n3->1\n"
    assert not verify_block(block(text)).ok
    assert verify_block(block(text), domain=fixed(8)).ok
    report = verify_block(block(text), domain=fixed(16))
    assert not report.ok and "(B,C,16,16)" in report.diagnostics[0].message


def test_the_batch_size_is_never_a_learned_axis():
    text = "##Batch##\n0:input\n1:output\n2:reshape(1,B*C,H,W)\n3:BN\n4:reshape(B,C,H,W)\n0->2\n2->3\n3->4\n4->1\n"
    for domain in (SQUARE, ANY, fixed(32)):
        report = verify_block(block(text), domain=domain)
        (error,) = [d for d in report.diagnostics if d.is_error]
        assert error.code.code == "NAD310" and "B*C" in error.message
        assert "last, smaller batch" in error.message and "another batch size" in error.message


# -- resolution-bound layers ------------------------------------------------------------------------

def test_a_resolution_bound_block_is_built_for_its_input_size():
    b = block(NORM_OVER_WIDTH)
    with pytest.raises(TorchBuildError, match="tied to its input resolution"):
        build_torch(b, 16)
    for size in (32, 16):
        module = build_torch(b, 16, input_size=size)
        assert module.layers["n3"].normalized_shape == (size // 2,)
        assert module(torch.randn(2, 16, size, size)).shape == (2, 16, size, size)
        pixels = build_torch(block(LINEAR_OVER_PIXELS), 16, input_size=size)
        assert pixels.layers["n3"].in_features == size * size
        assert pixels(torch.randn(3, 16, size, size)).shape == (3, 16, size, size)
    with pytest.raises(TorchBuildError, match="H % 2 == 0"):
        build_torch(b, 16, input_size=15)
    # The symbolic cost, evaluated at a size, counts what the module at that size has.
    report = verify_block(b)
    cost = block_cost(b, report.shapes).evaluate({"B": 1, "C": 16, "dim": 16, "H": 16, "W": 16})
    assert cost.params == sum(p.numel() for p in build_torch(b, 16, input_size=16).parameters())


def test_the_network_gives_each_stage_its_own_size():
    module, info = build_network(NORM_OVER_WIDTH, "nb201", "cifar10", widths=[8], depths=[1, 1, 1])
    sizes = [module.get_submodule(f"layer{i}.0").layers["n3"].normalized_shape for i in (1, 2, 3)]
    assert sizes == [(16,), (8,), (4,)]  # ceil(W/2) at 32, 16, 8
    assert info["params"] == sum(p.numel() for p in module.parameters())
    assert module(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    fitted = analyze(NORM_OVER_WIDTH, "nb201", "cifar10")  # the fit handles it too
    assert fitted["params"] <= 1_500_000 and len(fitted["notes"]) == 2


@pytest.mark.parametrize("name", list(SQUARE_ONLY))
def test_square_only_networks_export_to_onnx_that_agrees_with_pytorch(name, tmp_path):
    text, _ = SQUARE_ONLY[name]
    parsed = parse(text)
    model, module, info = export_network(parsed, skeleton="nb201", dataset="cifar10", widths=[8], depths=[1, 1, 1])
    dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["B", 3, 32, 32]  # built for CIFAR's size: not symbolic in H, W
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(batch))
        with torch.no_grad():
            expected = module(x).numpy()
        (got,) = session.run(None, {"input": x.numpy()})
        assert np.abs(got - expected).max() <= 1e-4
    # The command line builds them too, with the fitted widths.
    src, out = tmp_path / "a.nad", tmp_path / "a.onnx"
    src.write_text(text)
    run = run_nadc([str(src), "--network", "nb201", "--dataset", "cifar10", "--emit", "onnx", "-o", str(out)])
    assert run.code == 0, run.stderr
    assert "standard stem" in run.stderr and out.stat().st_size > 0


def test_the_emitted_network_source_gives_each_stage_its_size(tmp_path):
    src, out = tmp_path / "n.nad", tmp_path / "n.py"
    src.write_text(NORM_OVER_WIDTH)
    run = run_nadc([str(src), "--network", "nb201", "--widths", "8", "--depths", "1,1,1", "--emit", "torch",
                    "-o", str(out)])
    assert run.code == 0, run.stderr
    text = out.read_text()
    assert "def __init__(self, C, dim=None, *, H):" in text
    assert "NormOverWidth(8, H=32)" in text and "NormOverWidth(16, H=16)" in text
    import importlib.util

    spec = importlib.util.spec_from_file_location("generated_network", out)
    generated_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated_module)
    generated = generated_module.Network()
    module, _ = build_network(NORM_OVER_WIDTH, "nb201", "cifar10", widths=[8], depths=[1, 1, 1])
    assert generated.load_state_dict(module.state_dict()) is not None
    generated.eval(), module.eval()
    x = torch.randn(2, 3, 32, 32)
    assert torch.allclose(generated(x), module(x), atol=1e-5)


def test_a_block_valid_only_at_the_stage_sizes_builds_and_one_that_is_not_names_the_size():
    pooled = "##Pooled##\n0:input\n1:output\n2:AdaptiveAvgPool2d(output_size=8)\n3:Add\n0->2\n0,2->3\n3->1\n"
    module, info = build_network(pooled, "nb201", "cifar10", widths=[4], depths=[0, 0, 2])  # base only at 8x8
    assert module(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    assert any("verified at the resolutions this network feeds it" in n for n in info["notes"])
    with pytest.raises(BuildError, match=r"base block `Pooled` does not verify at 32x32: .*NAD301"):
        build_network(pooled, "nb201", "cifar10", widths=[4])
    # A square verdict whose condition on H fails at a stage: verified there, with that size's shapes.
    quarter = ("##Quarter##\n0:input\n1:output\n2:AvgPool2d(kernel_size=4,stride=4)\n3:repeat(1,1,4,4)\n4:Add\n"
               "0->2\n2->3\n0,3->4\n4->1\n")
    assert verify_block(block(quarter)).constraints == ["H % 4 == 0"]
    build_network(quarter, "nb201", "cifar10", widths=[4], depths=[1, 1, 1])  # 32, 16, 8
    with pytest.raises(BuildError, match=r"does not verify at 8x8: .*\(B,C,8,8\)"):
        build_network(quarter.replace("4,stride=4", "16,stride=16").replace("repeat(1,1,4,4)", "repeat(1,1,16,16)"),
                      "nb201", "cifar10", widths=[4], depths=[1, 1, 1])


# -- dead nodes ----------------------------------------------------------------------------------------

DEAD = """##Dead##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3)
3:Conv2d(out_channels=C*4,kernel_size=3)
4:BN
5:Add
0->2
0->3
3->4
2->5
0->5
5->1
"""


def test_dead_nodes_are_a_warning_and_dropped_when_compiled(tmp_path):
    report = verify_block(block(DEAD))
    assert report.ok and codes(report) == ["NAD206"]
    (warning,) = report.diagnostics
    assert "nodes 3 (`Conv2d`), 4 (`BN`)" in warning.message and "drops them" in warning.message
    assert report.shapes.order == [0, 2, 5, 1] and 3 not in report.shapes.shapes
    live = block(DEAD.replace("3:Conv2d(out_channels=C*4,kernel_size=3)\n4:BN\n", "").replace("0->3\n3->4\n", ""))
    module = build_torch(block(DEAD), 16)
    assert set(module.layers) == {"n2"}
    assert sum(p.numel() for p in module.parameters()) == sum(p.numel() for p in build_torch(live, 16).parameters())
    sizes = {"B": 1, "C": 16, "dim": 16, "H": 8, "W": 8}
    assert block_cost(block(DEAD), report.shapes).evaluate(sizes) == \
        block_cost(live, verify_block(live).shapes).evaluate(sizes)
    src, out = tmp_path / "d.nad", tmp_path / "d.onnx"
    src.write_text(DEAD)
    assert run_nadc([str(src), "--emit", "onnx", "-o", str(out)]).code == 0
    import onnx
    produced = {o for n in onnx.load(str(out)).graph.node for o in n.output}
    assert "n2_conv2d" in produced and not any(name.startswith(("n3_", "n4_")) for name in produced)
    emitted = run_nadc([str(src), "--emit", "torch"])
    assert emitted.code == 0 and "layers['n3']" not in emitted.stdout and "layers['n2']" in emitted.stdout


def test_a_cell_that_ignores_an_input_is_warned_about():
    text = "##C##\n0:input1\n1:input2\n2:output\n3:ReLU\n0->3\n3->2\n"
    report = verify_block(block(text))
    assert report.ok and codes(report) == ["NAD206"] and "the block ignores it" in report.diagnostics[0].message


# -- a base block alone ----------------------------------------------------------------------------------

BASE = """##Res##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3)
3:BN
4:Add
0->2
2->3
3->4
0->4
4->1
"""
CELL = """##Cell##
0:input1
1:input2
2:output
3:Conv2d(out_channels=C,kernel_size=3)
4:Add
0->3
3->4
1->4
4->2
"""


@pytest.mark.parametrize("skeleton,text,stem,down", [
    ("nb201", BASE, ["Conv2d", "BN"], ["ReLU", "Conv2d", "BN", "ReLU", "Conv2d", "BN", "AvgPool2d", "Conv2d", "Add"]),
    ("imagenet", BASE, ["Conv2d", "BN", "ReLU", "MaxPool2d"],
     ["Conv2d", "BN", "ReLU", "Conv2d", "BN", "Conv2d", "BN", "Add", "ReLU"]),
    ("darts", CELL, ["Conv2d", "BN"], None),
])
def test_a_base_block_alone_gets_the_skeletons_standard_blocks(skeleton, text, stem, down):
    module, info = build_network(text, skeleton, "cifar10", widths=[8])
    assert info["params"] == sum(p.numel() for p in module.parameters())
    assert module(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    assert len(info["notes"]) == 2 and "no stem block" in info["notes"][0] and skeleton in info["notes"][0]
    stem_ops = [s.where.split("`")[1] for s in module.stem.steps]
    assert stem_ops == stem
    if down is not None:
        assert [s.where.split("`")[1] for s in module.downsample1.steps] == down
    assert info["stem_stride"] == (4 if skeleton == "imagenet" else 1)


def test_nb201_standard_blocks_have_the_benchmarks_shapes():
    """NAS-Bench-201's stem and ResNet downsample block: parameters with one bias per convolution."""
    module, _ = build_network(BASE, "nb201", "cifar10", widths=[16], depths=[1, 1, 1])
    stem = sum(p.numel() for p in module.stem.parameters())
    assert stem == (3 * 9 * 16 + 16) + 2 * 16
    down = sum(p.numel() for p in module.downsample1.parameters())
    assert down == (16 * 9 * 32 + 32) + 2 * 32 + (32 * 9 * 32 + 32) + 2 * 32 + (16 * 32 + 32)


def test_a_file_with_its_own_stem_keeps_it_and_gets_the_standard_downsample_block():
    stem = "##Res_stem##\n0:input\n1:output\n2:Conv2d(out_channels=dim,kernel_size=5)\n0->2\n2->1\n"
    module, info = build_network(BASE + stem, "nb201", "cifar10", widths=[8])
    assert module.stem.layers["n2"].kernel_size == (5, 5)
    assert len(info["notes"]) == 1 and "no downsample block" in info["notes"][0]


def test_cost_prints_the_note_and_no_block_named_x_stem(tmp_path):
    src = tmp_path / "base.nad"
    src.write_text(BASE)
    run = run_nadc(["cost", str(src), "--network", "nb201", "--dataset", "cifar10"])
    assert run.code == 0, run.stderr
    assert "note: `Res` has no stem block" in run.stderr and "Res_stem" not in run.stderr
    data = json.loads(run_nadc(["cost", str(src), "--format", "json"]).stdout)
    assert data[0]["ok"] and len(data[0]["notes"]) == 2


def test_eval_of_a_base_block_alone(tmp_path):
    from click.testing import CliRunner

    from nader.cli import main

    src = tmp_path / "base.nad"
    src.write_text(BASE)
    result = CliRunner().invoke(main, ["eval", str(src), "--dataset", "digits", "--seeds", "777", "--epochs", "1",
                                       "--threads", "1", "--format", "json", "--builder", "test_domains:small_network"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)
    assert record["status"] == "ok" and record["test_acc"] is not None
    assert "note: `Res` has no stem block" in result.stderr


def small_network(arch_text, skeleton="nb201", dataset="cifar10", **kwargs):
    """`build_network` at a small width, so that the eval test trains quickly."""
    return build_network(arch_text, skeleton, dataset, widths=[4], depths=[1, 1, 1])


def test_a_resolution_bound_block_alone_exports_at_a_given_size(tmp_path):
    src, out = tmp_path / "n.nad", tmp_path / "n.onnx"
    src.write_text(NORM_OVER_WIDTH)
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out)])
    assert run.code == 1 and "tied to its input resolution" in run.stderr and "--input-size" in run.stderr
    run = run_nadc([str(src), "--emit", "onnx", "-o", str(out), "--input-size", "16", "--in-channels", "8"])
    assert run.code == 0, run.stderr
    import onnx
    model = onnx.load(str(out))
    assert [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == ["B", 8, 16, 16]
    torch.manual_seed(0)
    module = build_torch(block(NORM_OVER_WIDTH), 8, input_size=16).eval()
    from nader.compiler.backends.onnx import block_to_onnx
    session = ort.InferenceSession(block_to_onnx(block(NORM_OVER_WIDTH), module).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    x = torch.randn(3, 8, 16, 16)
    with torch.no_grad():
        expected = module(x).numpy()
    assert np.abs(session.run(None, {"input": x.numpy()})[0] - expected).max() <= 1e-4
    source = run_nadc([str(src), "--emit", "torch", "--input-size", "16"])
    assert source.code == 0 and "def __init__(self, C, dim=None, *, H=16):" in source.stdout
