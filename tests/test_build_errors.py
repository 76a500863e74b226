"""A `BuildError` keeps its diagnostics wherever it travels: each place that turns one into an
emitter's error (`EmitError`, `OnnxLoweringError`) carries them on, and `nadc` prints them as
`nadc verify` would (JSON for agents), not only the one-line message."""
from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, run_nadc
from nader.compiler.errors import BuildError
from nader.dsl.parser import parse

ARCH = (REPO_ROOT / "examples" / "resnet_basic.nad").read_text()
_BASE, _REST = ARCH.split("##ResNetBasic_stem##")
# Verifies where H % 8 == 0: CIFAR's stages (32, 16, 8), not digits' (16, 8, 4): the network's
# BuildError, at 4x4, carries the verifier's NAD315.
EIGHTS = (_BASE.replace("4:ReLU", "4:reshape(B,C,H/8,8,W)\n9:reshape(B,C,H,W)").replace("4->5", "4->9\n9->5")
          + "##ResNetBasic_stem##" + _REST)
# A block whose Add reads C and C*2 channels: it reaches the ONNX exporter, whose PyTorch build refuses it.
MISMATCHED = ("##Mismatch##\n0:input\n1:output\n2:Conv2d(out_channels=C*2,kernel_size=1)\n3:Add\n"
              "0->2\n2->3\n0->3\n3->1\n")


def _codes(stderr: str) -> set:
    """The codes of the JSON diagnostics `nadc --format json` wrote on stderr before its error line."""
    document = stderr[:stderr.rindex("]") + 1]
    return {d["code"] for d in json.loads(document)}


@pytest.fixture()
def eights(tmp_path):
    path = tmp_path / "eights.nad"
    path.write_text(EIGHTS)
    return path


def test_the_torch_network_emitter_carries_the_diagnostics(eights):
    """backends/network_source.py: emit_network_source's BuildError -> EmitError."""
    from nader.compiler.backends.errors import EmitError
    from nader.compiler.backends.network_source import emit_network_source
    from nader.compiler.commands.compile import EmitOptions

    with pytest.raises(EmitError) as caught:
        emit_network_source(parse(EIGHTS, str(eights)), EmitOptions(network="nb201", dataset="digits"))
    assert [d.code.code for d in caught.value.diagnostics] == ["NAD315"]
    run = run_nadc([str(eights), "--network", "nb201", "--dataset", "digits", "--emit", "torch", "--format", "json"])
    assert run.code == 1 and _codes(run.stderr) == {"NAD315"} and "does not verify at 4x4" in run.stderr


def test_the_network_line_carries_the_diagnostics(monkeypatch, tmp_path):
    """commands/compile.py: the network line's dataset BuildError -> EmitError."""
    from nader.compiler import datasets
    from nader.compiler.backends.errors import EmitError
    from nader.compiler.commands.compile import EmitOptions, _with_header

    diagnostic = parse("##X##\n0:input\n1:output\n2:Frobnicate\n0->2\n2->1\n").diagnostics[0]

    def refuse(name):
        raise BuildError(f"no dataset {name}", [diagnostic])

    monkeypatch.setattr(datasets, "dataset_info", refuse)
    text = "# nadc-network: skeleton=nb201 dataset=cifar10 classes=10\n" + ARCH
    with pytest.raises(EmitError) as caught:
        _with_header(parse(text, str(tmp_path / "a.nad")), EmitOptions(), "torch")
    assert caught.value.diagnostics == [diagnostic]


def test_the_onnx_block_export_carries_the_diagnostics(tmp_path):
    """backends/onnx/export.py: export_block's BuildError -> OnnxLoweringError (-> EmitError in emit)."""
    pytest.importorskip("onnx")
    from nader.compiler.backends.onnx.export import export_block
    from nader.compiler.backends.onnx.graph import OnnxLoweringError

    block = parse(MISMATCHED).program.blocks[0]
    with pytest.raises(OnnxLoweringError) as caught:
        export_block(block)
    codes = {d.code.code for d in caught.value.diagnostics}
    assert codes and all(code.startswith("NAD3") for code in codes)
    path = tmp_path / "mismatch.nad"
    path.write_text(MISMATCHED)
    run = run_nadc([str(path), "--emit", "onnx", "-o", str(tmp_path / "out.onnx"), "--format", "json"])
    assert run.code == 1 and _codes(run.stderr) == codes


def test_the_onnx_network_build_carries_the_diagnostics(eights):
    """backends/onnx/export.py: build_for_export's BuildError -> OnnxLoweringError."""
    pytest.importorskip("onnx")
    from nader.compiler.backends.onnx.export import build_for_export
    from nader.compiler.backends.onnx.graph import OnnxLoweringError

    with pytest.raises(OnnxLoweringError) as caught:
        build_for_export(parse(EIGHTS, str(eights)), skeleton="nb201", dataset="digits")
    assert [d.code.code for d in caught.value.diagnostics] == ["NAD315"]


def test_the_onnx_network_emitter_carries_the_diagnostics(eights, tmp_path):
    """backends/onnx/export.py: _emit_network's OnnxLoweringError -> EmitError, printed by nadc."""
    pytest.importorskip("onnx")
    run = run_nadc([str(eights), "--network", "nb201", "--dataset", "digits", "--emit", "onnx",
                    "-o", str(tmp_path / "out.onnx"), "--format", "json"])
    assert run.code == 1 and _codes(run.stderr) == {"NAD315"}
    text = run_nadc([str(eights), "--network", "nb201", "--dataset", "digits", "--emit", "onnx",
                     "-o", str(tmp_path / "out.onnx")])
    assert "error[NAD315]" in text.stderr and "eights.nad:7:" in text.stderr  # quoted as nadc verify does
