"""`nader-search best RUN --emit nad|torch|onnx [--weights]`: the trained best model out in one step,
and `nadc ARCH.nad --emit torch` rebuilding the same network from the written file alone."""
from __future__ import annotations

import importlib.util
import json
import sqlite3

import pytest
import torch
from click.testing import CliRunner

from nader.cli import main
from nader.compiler.cli import cli as nadc_main
from nader.compiler.network_header import HeaderError, read_header
from search_helpers import EXAMPLE

# the suite's fast training: digits, one block per stage, one epoch, one thread (tests/search)
FAST = ["--dataset", "digits", "--depths", "1,1,1", "--epochs", "1", "--threads", "1"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def nadc(*args):
    return CliRunner().invoke(nadc_main, [str(a) for a in args])


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    run = tmp_path_factory.mktemp("best") / "run"
    r = invoke("run", "--from", EXAMPLE, *FAST, "--trials", "2", "--strategy", "walk", "--run-dir", run,
               "--format", "json")
    assert r.exit_code == 0, r.output
    best = json.loads(invoke("best", run, "--format", "json").stdout)  # the record, with its seeds
    assert best["arch_id"] == json.loads(r.stdout)["best"]["arch_id"]
    return run, best


def _module(path):
    spec = importlib.util.spec_from_file_location(f"emitted_{abs(hash(str(path)))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Network()


def _job(run, best):
    from nader.runtime.jobs import Job

    conn = sqlite3.connect(run / "runs.sqlite")
    try:
        (spec,) = conn.execute("SELECT spec FROM jobs WHERE job_id=?", (best["seeds"][0]["job_id"],)).fetchone()
    finally:
        conn.close()
    return Job.from_json(spec)


def _test_accuracy(model, job) -> float:
    """The test split's accuracy as the trainer measures it (same data, limit and normalisation)."""
    from nader.runtime.data import load_dataset
    from nader.runtime.pipeline import DeviceLoader, place_split
    from nader.runtime.presets import resolve
    from nader.runtime.trainer import accuracy_and_loss

    p = resolve(job.preset, {k: v for k, v in job.options.items() if k not in ("threads", "device")})
    data = load_dataset(job.dataset, job.data_dir)
    dev = torch.device("cpu")
    test = DeviceLoader(place_split(data.test, dev, p.eval_limit), p.eval_batch_size, data.mean, data.std,
                        train=False)
    return accuracy_and_loss(model.to(dev), test)[0]


def test_best_emit_torch_with_weights_scores_the_recorded_test_accuracy(finished, tmp_path):
    run, best = finished
    out = tmp_path / "model.py"
    r = invoke("best", run, "--emit", "torch", "--weights", "-o", out)
    assert r.exit_code == 0, r.output
    assert out.is_file() and out.with_suffix(".pt").is_file()
    model = _module(out)
    model.load_state_dict(torch.load(out.with_suffix(".pt"), weights_only=True))  # strict: every key matches
    assert _test_accuracy(model, _job(run, best)) == pytest.approx(best["seeds"][0]["test_acc"], abs=1e-9)
    assert best["seeds"][0]["test_acc"] == pytest.approx(best["test_acc"])  # one seed: the recorded figure


def test_the_written_nad_rebuilds_the_same_network_with_nadc_alone(finished, tmp_path):
    run, best = finished
    nad = tmp_path / "best.nad"
    assert invoke("best", run, "--emit", "nad", "--weights", "-o", nad).exit_code == 0
    header = read_header(nad.read_text())
    job = _job(run, best)
    assert header["skeleton"] == job.skeleton and header["dataset"] == "digits"
    assert list(header["depths"]) == [1, 1, 1] and list(header["widths"]) == best["widths"]
    assert header["classes"] == 10
    src = tmp_path / "rebuilt.py"
    r = nadc(nad, "--emit", "torch", "-o", src)  # no --network, --dataset, --widths or --depths
    assert r.exit_code == 0, r.output
    model = _module(src)
    model.load_state_dict(torch.load(nad.with_suffix(".pt"), weights_only=True))
    assert _test_accuracy(model, job) == pytest.approx(best["seeds"][0]["test_acc"], abs=1e-9)
    # the network line is a comment: the blocks' hash is the stored text's, and fmt keeps the line
    stored = tmp_path / "stored.nad"
    stored.write_text(best["text"])
    assert nadc("hash", nad).output.split()[0] == nadc("hash", stored).output.split()[0]
    assert read_header(nadc("fmt", nad).output) == header


def test_best_emit_onnx_with_weights_computes_what_the_torch_module_does(finished, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    run, _ = finished
    assert invoke("best", run, "--emit", "torch", "--weights", "-o", tmp_path / "m.py").exit_code == 0
    assert invoke("best", run, "--emit", "onnx", "--weights", "-o", tmp_path / "m.onnx").exit_code == 0
    model = _module(tmp_path / "m.py")
    model.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    x = torch.randn(4, 3, 16, 16)
    with torch.no_grad():
        expected = model.eval()(x).numpy()
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"input": x.numpy()})
    assert abs(got - expected).max() < 1e-4


def test_trial_picks_another_architecture_and_errors_are_one_line(finished, tmp_path):
    run, best = finished
    other = 1 - best["arch_id"] if best["arch_id"] in (0, 1) else 0
    assert invoke("best", run, "--trial", other, "--emit", "nad", "-o", tmp_path / "a.nad").exit_code == 0
    assert f"arch #{other} " in (tmp_path / "a.nad").read_text().splitlines()[0]
    r = invoke("best", run, "--emit", "torch")
    assert r.exit_code == 2 and "give -o OUT" in r.output
    r = invoke("best", run, "--trial", 99, "--emit", "nad", "-o", tmp_path / "b.nad")
    assert r.exit_code == 2 and "no architecture #99" in r.output
    r = invoke("best", run, "--weights")
    assert r.exit_code == 2 and "go with --emit" in r.output


def test_a_damaged_network_line_is_one_error(tmp_path):
    bad = tmp_path / "bad.nad"
    bad.write_text("# nadc-network: skeleton=nb201 depths=1,x\n" + EXAMPLE.read_text())
    with pytest.raises(HeaderError, match="depths=1,x"):
        read_header(bad.read_text())
    r = nadc(bad, "--emit", "torch")
    assert r.exit_code == 1 and "depths=1,x is not a list of positive integers" in r.output
