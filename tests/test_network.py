"""Whole networks: skeletons, `build_network`, the standalone emitter and `nadc cost`.

The architectures here are written for the tests (small ResNet-style blocks, a tiny
DARTS-style cell pair); the NADER corpus is only used where marked (skips when absent).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from conftest import REPO_ROOT, run_nadc
from nader.compiler.architecture import load_architecture
from nader.compiler.datasets import DATASETS
from nader.compiler.errors import BuildError
from nader.compiler.network import build_network
from nader.compiler.network_cost import peak_memory
from nader.compiler.plan import make_plan
from nader.compiler.skeletons import SKELETONS

BASE = """##Res##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3)
3:BN
4:ReLU
5:Conv2d(out_channels=C,kernel_size=3)
6:BN
7:Add
0->2
2->3
3->4
4->5
5->6
6->7
0->7
7->1
"""
STEM = """##Res_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3)
3:BN
0->2
2->3
3->1
"""
STEM4 = """##Res_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=7,stride=2)
3:MaxPool2d(kernel_size=3,stride=2)
0->2
2->3
3->1
"""
DOWN = """##Res_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=2,stride=2)
3:BN
0->2
2->3
3->1
"""
ARCH = BASE + STEM + DOWN
ARCH4 = BASE + STEM4 + DOWN
BOTTLE = ARCH.replace("2:Conv2d(out_channels=C,kernel_size=3)", "2:Conv2d(out_channels=C/4,kernel_size=1)") \
    .replace("5:Conv2d(out_channels=C,kernel_size=3)", "5:Conv2d(out_channels=C,kernel_size=3,groups=C/4)", 1)

CELLS = """##Tiny##
0:input1
1:input2
2:output
3:ReLU
4:Conv2d(out_channels=C,kernel_size=3,groups=C)
5:BN
6:Add
7:concat(dim=1)
8:Conv2d(out_channels=C,kernel_size=1)
0->3
3->4
4->5
5->6
1->6
6->7
1->7
7->8
8->2
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
3:MaxPool2d(kernel_size=2,stride=2)
4:AvgPool2d(kernel_size=3,stride=2)
5:Add
6:Conv2d(out_channels=C,kernel_size=1)
0->3
1->4
3->5
4->5
5->6
6->2
"""


def params_of(module) -> int:
    return sum(p.numel() for p in module.parameters())


# -- build_network ----------------------------------------------------------------------------

@pytest.mark.parametrize("skeleton,dataset,arch,widths,classes,size", [
    ("nb201", "cifar10", ARCH, [4], 10, 32),
    ("nb201", "imagenet16-120", ARCH, [4, 8, 16], 120, 16),
    ("imagenet", "cifar100", ARCH4, [4], 100, 32),
    ("darts", "cifar10", CELLS, [4], 10, 32),
])
def test_build_network_runs_and_reports(skeleton, dataset, arch, widths, classes, size):
    module, info = build_network(arch, skeleton, dataset, widths=widths, depths=None)
    assert info["num_classes"] == classes and info["input_size"] == size
    assert info["params"] == params_of(module)
    assert info["widths"][0] == widths[0] and len(info["widths"]) == len(SKELETONS[skeleton].multipliers)
    assert info["depths"] == list(SKELETONS[skeleton].depths)
    assert "binding" not in info  # widths were given, nothing was fitted
    module.eval()
    with torch.no_grad():
        out = module(torch.randn(2, 3, size, size))
    assert out.shape == (2, classes)
    loss = module.train()(torch.randn(2, 3, size, size)).sum()
    loss.backward()


def test_fitted_build_reports_the_budget():
    module, info = build_network(ARCH, "nb201", "cifar10")
    assert info["params"] <= 1_500_000 and info["flops"] <= 200_000_000
    assert info["binding"] in ("params", "flops", "params,flops")
    assert info["budget"]["params"] == 1_500_000 and info["budget"]["flops"] == 200_000_000
    assert info["widths"] == [info["widths"][0] * m for m in (1, 2, 4)]
    assert info["params"] == params_of(module)


def test_nb201_skeleton_layout():
    arch = load_architecture(ARCH, "nb201")
    plan = make_plan(arch, [8, 16, 32], (5, 5, 5), 32, 10, SKELETONS["nb201"])
    assert [len(s) for s in plan.stages] == [5, 5, 5]
    assert [(d.name, str(d.C), str(d.dim), d.size, d.out_size) for d in plan.downsamples] == [
        ("downsample1", "8", "16", (32, 32), (16, 16)), ("downsample2", "16", "32", (16, 16), (8, 8))]
    assert plan.stem.size == (32, 32) and plan.stem.out_size == (32, 32)
    assert plan.fc.cin == plan.widths[-1] and str(plan.fc.cout) == "10"


def test_depths_do_not_count_the_downsample_block():
    """NADER's ImageNet setting 2,3,5,2 means 12 base blocks plus 3 downsample blocks."""
    module, info = build_network(ARCH4, "imagenet", "cifar100", widths=[4])
    assert [len(getattr(module, f"layer{i}")) for i in range(1, 5)] == [2, 3, 5, 2]
    assert all(hasattr(module, f"downsample{i}") for i in (1, 2, 3)) and not hasattr(module, "downsample4")
    module, _ = build_network(ARCH4, "imagenet", "cifar100", widths=[4], depths=[2, 2, 8, 2])
    assert [len(getattr(module, f"layer{i}")) for i in range(1, 5)] == [2, 2, 8, 2]


def test_stem_stride_is_the_stems_own():
    assert build_network(ARCH4, "imagenet", "imagenet", widths=[4], depths=[1, 1, 1, 1])[1]["stem_stride"] == 4
    assert build_network(ARCH, "imagenet", "cifar100", widths=[4], depths=[1, 1, 1, 1])[1]["stem_stride"] == 1
    with pytest.raises(BuildError, match="stem block `Res_stem` does not verify"):
        build_network(ARCH4, "nb201", "cifar10", widths=[4], stem_stride=1)


def test_darts_cells_and_preprocessing():
    module, info = build_network(CELLS, "darts", "cifar10", widths=[4], depths=[2, 2, 2])
    cells = module.cells
    assert len(cells) == 8
    assert [c.reduction for c in cells] == [False, False, True, False, False, True, False, False]
    kinds = [(type(c.preprocess0).__name__, type(c.preprocess1).__name__) for c in cells]
    # After a reduction the cell two back has twice the resolution: FactorizedReduce.
    assert kinds[3][0] == "FactorizedReduce" and kinds[6][0] == "FactorizedReduce"
    assert kinds[0] == ("Identity", "Identity") and kinds[2] == ("Sequential", "Sequential")
    assert build_network(CELLS, "darts", "cifar10", widths=[4])[0].cells.__len__() == 20
    assert info["params"] == params_of(module)


def test_darts_handles_odd_resolutions():
    module, info = build_network(CELLS, "darts", "cifar10", widths=[4], depths=[1, 1, 1], input_size=13)
    assert module.eval()(torch.randn(1, 3, 13, 13)).shape == (1, 10)


@pytest.mark.parametrize("kwargs,message", [
    (dict(skeleton="resnet"), "unknown skeleton"),
    (dict(dataset="mnist"), "unknown dataset"),
    (dict(widths=[4, 9, 16]), "stage widths must double"),
    (dict(widths=[4, 8]), "has 3 stages"),
    (dict(depths=[1, 2]), "has 3 stages"),
    (dict(widths=[0]), "positive"),
])
def test_bad_options_raise_build_error(kwargs, message):
    kwargs = dict(kwargs)
    skeleton = kwargs.pop("skeleton", "nb201")
    dataset = kwargs.pop("dataset", "cifar10")
    with pytest.raises(BuildError, match=message):
        build_network(ARCH, skeleton, dataset, **kwargs)


@pytest.mark.parametrize("text,skeleton,message", [
    ("this is not a block", "nb201", "NAD"),
    (STEM + DOWN, "nb201", "no base block"),
    (CELLS, "nb201", "two-input cells"),
    (ARCH, "darts", "needs two-input cells"),
    (ARCH.replace("5:Conv2d(out_channels=C,", "5:Conv2d(out_channels=C*2,"), "nb201",
     "base block `Res` does not verify"),
    (BASE.replace("##Res##", "##A##") + BASE.replace("##Res##", "##B##") + STEM + DOWN, "nb201",
     "several base blocks"),
])
def test_invalid_architectures_raise_readable_build_errors(text, skeleton, message):
    with pytest.raises(BuildError, match=message) as caught:
        build_network(text, skeleton, "cifar10", widths=[8])
    assert "Traceback" not in str(caught.value)


def test_blocks_are_picked_by_role_and_name():
    """An extra base block is ignored when the stem and downsample name the base (X, X_stem, X_downsample)."""
    extra = "##Other##\n0:input\n1:output\n2:ReLU\n0->2\n2->1\n"
    _, with_extra = build_network(extra + ARCH, "nb201", "cifar10", widths=[4])
    _, plain = build_network(ARCH, "nb201", "cifar10", widths=[4])
    assert with_extra["params"] == plain["params"]


def test_constraints_apply_to_each_stage_width():
    with pytest.raises(BuildError, match=r"C=6\) requires C % 4 == 0"):
        build_network(BOTTLE, "nb201", "cifar10", widths=[6])
    module, info = build_network(BOTTLE, "nb201", "cifar10", widths=[4])
    assert info["params"] == params_of(module)
    fitted = build_network(BOTTLE, "nb201", "cifar10")[1]
    assert fitted["widths"][0] % 4 == 0


def test_build_error_is_what_the_runtime_catches():
    from nader.runtime.jobs import _is_build_error

    with pytest.raises(BuildError) as caught:
        build_network("##X##\n0:input\n", "nb201", "digits")
    assert _is_build_error(caught.value)


def test_runtime_datasets_are_known():
    module, info = build_network(ARCH, "nb201", "digits")
    assert info["input_size"] == 16 and info["num_classes"] == 10 and info["params"] <= 100_000
    assert set(DATASETS) >= {"cifar10", "cifar100", "imagenet16-120", "imagenet", "digits"}


def test_peak_memory_counts_live_activations():
    arch = load_architecture(ARCH, "nb201")
    plan = make_plan(arch, [4, 8, 16], (1, 1, 1), 8, 10, SKELETONS["nb201"])
    # The base block at 4x8x8 keeps its input alive to the Add: input, conv, BN, ReLU, conv, BN, add.
    assert peak_memory(arch, plan) == 4 * (4 * 64) * 3


# -- the standalone emitter ----------------------------------------------------------------------

RUNNER = textwrap.dedent("""
    import importlib.util, sys, torch
    spec = importlib.util.spec_from_file_location("generated_model", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert not [m for m in sys.modules if m == "nader" or m.startswith("nader.")], "imports nader"
    model = mod.Network().eval()
    model.load_state_dict(torch.load(sys.argv[2]))
    x = torch.load(sys.argv[3])
    with torch.no_grad():
        torch.save(model(x), sys.argv[4])
""")


@pytest.mark.parametrize("arch,network,dataset,widths", [
    (ARCH, "nb201", "cifar100", "4"),
    (ARCH, "nas-bench-201", "cifar10", "4"),
    (CELLS, "darts", "cifar10", "4,8,16"),
    (ARCH4, "imagenet", "cifar100", "4"),
])
def test_emitted_network_is_standalone_and_equal(tmp_path, arch, network, dataset, widths):
    source = tmp_path / "arch.nad"
    source.write_text(arch, encoding="utf-8")
    out = tmp_path / "model.py"
    argv = [str(source), "--network", network, "--dataset", dataset, "--widths", widths, "--emit", "torch",
            "-o", str(out)]
    if network == "darts":
        argv += ["--depths", "1,1,1"]
    result = run_nadc(argv)
    assert result.code == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert "import nader" not in text and "from nader" not in text
    reference, info = build_network(arch, network, dataset, widths=[int(w) for w in widths.split(",")],
                                    depths=[1, 1, 1] if network == "darts" else None)
    reference.eval()
    torch.manual_seed(0)
    for p in reference.parameters():  # non-default weights, so equality means something
        p.data.normal_(0, 0.1)
    size = info["input_size"]
    x = torch.randn(2, 3, size, size)
    torch.save(reference.state_dict(), tmp_path / "weights.pt")
    torch.save(x, tmp_path / "x.pt")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(out), str(tmp_path / "weights.pt"), str(tmp_path / "x.pt"),
                           str(tmp_path / "y.pt")], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    y = torch.load(tmp_path / "y.pt")
    with torch.no_grad():
        expected = reference(x)
    assert y.shape == (2, info["num_classes"])
    assert torch.allclose(y, expected, atol=1e-5, rtol=1e-4)


def test_emit_without_network_is_unchanged_and_errors_are_clean(tmp_path):
    source = tmp_path / "arch.nad"
    source.write_text(ARCH, encoding="utf-8")
    result = run_nadc([str(source), "--network", "nb201", "--widths", "4,9,16", "--emit", "torch"])
    assert result.code == 1 and "must double" in result.stderr and "Traceback" not in result.stderr
    result = run_nadc([str(source), "--network", "darts", "--emit", "torch"])
    assert result.code == 1 and "two-input cells" in result.stderr


# -- nadc cost -------------------------------------------------------------------------------------

def test_cost_command_text_and_json(tmp_path):
    a, b = tmp_path / "a.nad", tmp_path / "b.nad"
    a.write_text(ARCH, encoding="utf-8")
    b.write_text(BOTTLE, encoding="utf-8")
    result = run_nadc(["cost", str(a), str(b), "--network", "nb201", "--dataset", "cifar100"])
    assert result.code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2 and all("binding" in line and "params" in line and "FLOPs" in line for line in lines)
    result = run_nadc(["cost", str(a), str(b), "--dataset", "cifar100", "--format", "json"])
    objects = json.loads(result.stdout)
    assert [o["file"] for o in objects] == [str(a), str(b)]
    for o in objects:
        assert {"file", "widths", "depths", "params", "flops", "binding"} <= set(o)
        assert isinstance(o["params"], int) and isinstance(o["flops"], int)
        module, info = build_network((tmp_path / o["file"]).read_text(encoding="utf-8"), "nb201", "cifar100")
        assert info["params"] == o["params"] == params_of(module) and info["widths"] == o["widths"]


def test_cost_command_evaluates_given_widths(tmp_path):
    a = tmp_path / "a.nad"
    a.write_text(ARCH, encoding="utf-8")
    result = run_nadc(["cost", str(a), "--widths", "8", "--depths", "1,2,3", "--input-size", "16", "--format", "json"])
    (o,) = json.loads(result.stdout)
    assert result.code == 0 and o["widths"] == [8, 16, 32] and o["depths"] == [1, 2, 3] and o["binding"] is None
    _, info = build_network(ARCH, "nb201", "cifar10", widths=[8], depths=[1, 2, 3], input_size=16)
    assert o["params"] == info["params"] and o["flops"] == info["flops"] and o["input_size"] == 16


def test_cost_command_exit_statuses(tmp_path):
    good, bad = tmp_path / "good.nad", tmp_path / "bad.nad"
    good.write_text(ARCH, encoding="utf-8")
    bad.write_text(BASE.replace("0->7\n", ""), encoding="utf-8")  # the Add has one input
    result = run_nadc(["cost", str(good), str(bad)])
    assert result.code == 1 and "NAD207" in result.stderr and str(good) in result.stdout
    result = run_nadc(["cost", str(good), "--max-params", "0.0001"])
    assert result.code == 1 and "no width fits the budget" in result.stderr
    result = run_nadc(["cost", str(good), "--max-params", "0.05", "--format", "json"])
    (o,) = json.loads(result.stdout)
    assert result.code == 0 and o["params"] <= 50_000 and o["binding"] == "params"
    for argv in (["--widths", "4,9,16"], ["--widths", "x"], ["--network", "vgg"], ["--depths", "1,2"],
                 ["--dataset", "mnist"]):
        result = run_nadc(["cost", str(good), *argv])
        assert result.code == 2, (argv, result.stdout, result.stderr)
    result = run_nadc(["cost", str(tmp_path / "missing.nad")])
    assert result.code == 1 and "cannot read" in result.stderr


def test_cost_command_does_not_import_torch(tmp_path):
    a = tmp_path / "a.nad"
    a.write_text(ARCH, encoding="utf-8")
    probe = ("import sys\nfrom nader.compiler.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "sys.__stderr__.write('TORCH:' + str('torch' in sys.modules) + '\\n')\n")
    done = subprocess.run([sys.executable, "-c", probe, "cost", str(a)], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert "TORCH:False" in done.stderr, done.stderr


def test_compat_corpus_costs(compat_dir):
    files = sorted(str(p) for p in (compat_dir / "blocks").glob("nas-bench-201__*.txt"))
    result = run_nadc(["cost", *files, "--dataset", "cifar100", "--format", "json"])
    objects = json.loads(result.stdout)
    assert result.code == 0 and len(objects) == len(files)
    assert all(o["params"] <= 1_500_000 and o["flops"] <= 200_000_000 for o in objects)
    by_name = {o["file"].rsplit("/", 1)[-1]: o for o in objects}
    assert by_name["nas-bench-201__resnet_basic.txt"]["widths"] == [25, 50, 100]
