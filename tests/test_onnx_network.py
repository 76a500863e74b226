"""Whole networks exported to ONNX against the PyTorch network, on the same weights.

Each network is lowered from its plan (`compiler/backends/onnx/network.py`) with randomized
weights and BN statistics, checked, and run with onnxruntime at the planned input size and
others (odd ones too: the models keep B, H, W symbolic); outputs must agree within TOLERANCE.
"""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from conftest import run_nadc  # noqa: E402
from onnx_cases import DARTS_ARCH, NETWORKS, TOLERANCE, dims, ort_session  # noqa: E402
from nader.compiler.backends.onnx import (  # noqa: E402
    LAYER_LOWERINGS, OnnxLoweringError, build_for_export, check_model, network_to_onnx)
from nader.compiler.plan import LAYER_KINDS  # noqa: E402
from nader.dsl.parser import parse  # noqa: E402


# -- helpers -------------------------------------------------------------------------------------

def _randomize_network(module) -> None:
    for layer in module.modules():
        if isinstance(layer, torch.nn.BatchNorm2d):
            layer.running_mean.uniform_(-0.3, 0.3)
            layer.running_var.uniform_(0.5, 2.0)
            layer.weight.data.uniform_(0.5, 1.5)
            layer.bias.data.uniform_(-0.3, 0.3)


def compare_network(model, module, sizes) -> float:
    check_model(model)
    session = ort_session(model)
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
    assert dims(model.graph.input[0]) == ["B", 3, "H", "W"]
    assert dims(model.graph.output[0]) == ["B", info["num_classes"]]


def test_darts_network_uses_factorized_reduce_at_odd_sizes():
    model, module, _ = _network("darts", DARTS_ARCH, widths=(8,), depths=(1, 1, 1))
    assert any("preprocess0.conv_1" in n.output[0] for n in model.graph.node)
    compare_network(model, module, ((2, 9, 11), (1, 1, 2)))  # H = 1: an empty slice, then the end pad


def test_every_skeleton_layer_kind_has_a_lowering():
    assert set(LAYER_LOWERINGS) == set(LAYER_KINDS)


def test_a_missing_weight_is_named_not_a_traceback():
    built = build_for_export(parse(DARTS_ARCH), skeleton="darts", widths=(8,), depths=(1, 1, 1))
    full = built.module.state_dict()
    state = {k: v for k, v in full.items() if k != "cells.2.preprocess0.bn.running_var"}
    assert len(state) == len(full) - 1
    with pytest.raises(OnnxLoweringError, match="cells.2.preprocess0.bn"):
        network_to_onnx(built.arch, built.plan, state)
    state = {k: v for k, v in full.items() if k != "fc.weight"}
    assert len(state) == len(full) - 1
    with pytest.raises(OnnxLoweringError, match="fc.weight"):
        network_to_onnx(built.arch, built.plan, state)


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
    check_model(model)
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
