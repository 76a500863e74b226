"""`nader-search best RUN --emit nad|torch|onnx [--weights]`: the trained best model out in one step,
and `nadc ARCH.nad --emit torch` rebuilding the same network from the written file alone."""
from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

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
    assert invoke("best", run, "--emit", "onnx", "--weights", "-o", tmp_path / "m-onnx.onnx").exit_code == 0
    model = _module(tmp_path / "m.py")
    model.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    x = torch.randn(4, 3, 16, 16)
    with torch.no_grad():
        expected = model.eval()(x).numpy()
    session = ort.InferenceSession(str(tmp_path / "m-onnx.onnx"), providers=["CPUExecutionProvider"])
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


# -- issue 41, finding 12: a checkpoint is loaded strictly into the emitted network before anything is written

def _copy(run, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


def _damage(run, best, how: str) -> None:
    path = run / "checkpoints" / f"{best['seeds'][0]['job_id']}.pt"
    ck = torch.load(path, weights_only=True)
    model = ck["model"]
    key = next(k for k in model if k.endswith("weight") and model[k].dim() > 1)
    if how == "missing":
        del model[key]
    elif how == "unexpected":
        model["extra.weight"] = torch.zeros(3)
    elif how == "shape":
        model[key] = torch.zeros(*model[key].shape[:-1], model[key].shape[-1] + 1)
    else:  # not tensors
        ck["model"] = {k: 1 for k in model}
    torch.save(ck, path)


@pytest.mark.parametrize("emit, how", [("nad", "missing"), ("torch", "shape"), ("onnx", "unexpected"),
                                       ("onnx", "shape"), ("torch", "values")])
def test_weights_that_do_not_fit_the_network_are_refused_and_nothing_is_written(finished, tmp_path, emit, how):
    run, best = finished
    run = _copy(run, tmp_path)
    _damage(run, best, how)
    out = tmp_path / "out" / f"m.{emit}"
    out.parent.mkdir()
    r = invoke("best", run, "--emit", emit, "--weights", "-o", out)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: the weights ") and "nothing was written" in line, line
    assert ("does not fit the network" in line) if how != "values" else ("holds no state_dict" in line)
    assert list(out.parent.iterdir()) == []


# -- issue 41, finding 13: best -o never writes over the run, nor two outputs on one file ----------------

def _files(folder):
    import hashlib

    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("argv", [[], ["--pareto"], ["--emit", "nad"], ["--emit", "torch", "--weights"]],
                         ids=["text", "pareto", "nad", "torch-weights"])
@pytest.mark.parametrize("target", ["runs.sqlite", "search.lock", "checkpoints/JOB.py"])
def test_an_output_on_the_runs_own_files_is_refused(finished, tmp_path, argv, target):
    run, best = finished
    run = _copy(run, tmp_path)
    (run / "search.lock").write_text("")
    target = run / target.replace("JOB", best["seeds"][0]["job_id"])
    before = _files(run)
    r = invoke("best", run, *argv, "-o", target)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: cannot write ") and "write the output elsewhere" in line, line
    assert _files(run) == before


def test_two_outputs_on_one_file_are_refused(finished, tmp_path):
    run, _ = finished
    r = invoke("best", run, "--emit", "nad", "--weights", "-o", tmp_path / "x.pt")  # the .nad and its weights
    assert r.exit_code == 2 and "each output needs a path of its own" in r.stderr, r.output
    r = invoke("best", run, "--emit", "torch", "-o", tmp_path / "x.json")  # the model and its sidecar
    assert r.exit_code == 2 and "each output needs a path of its own" in r.stderr, r.output
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_every_output_byte_for_byte(finished, tmp_path, monkeypatch):
    """In process: the second file's write fails (a full disk): the first, written to its temporary
    file already, is not renamed over its target either; nothing is left behind."""
    from nader.inputs import writes

    run, best = finished
    out = tmp_path / "m.py"
    assert invoke("best", run, "--emit", "torch", "--weights", "-o", out).exit_code == 0
    before = _files(tmp_path)
    real, calls = writes._write_all, []

    def second_fails(fd, data):
        calls.append(fd)
        if len(calls) == 2:
            import errno
            import os

            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(writes, "_write_all", second_fails)
    other = 1 - best["arch_id"] if best["arch_id"] in (0, 1) else 0
    r = invoke("best", run, "--trial", other, "--emit", "torch", "--weights", "-o", out)
    assert r.exit_code == 2 and "No space left on device" in r.stderr and "unchanged" in r.stderr, r.output
    assert _files(tmp_path) == before


def test_a_full_disk_leaves_every_output_byte_for_byte(finished, tmp_path):
    """On a real full filesystem (a small tmpfs; the in-process test above covers machines that cannot
    mount one): the model, weights and sidecar of an earlier export stay as they were."""
    from test_writes import _fill, _tiny_filesystem

    run, best = finished
    other = 1 - best["arch_id"] if best["arch_id"] in (0, 1) else 0
    with _tiny_filesystem(tmp_path / "disk", size="2m") as disk:
        if disk is None:
            pytest.skip("cannot mount a tmpfs here (needs root); the in-process test covers the path")
        out = disk / "m.py"
        assert invoke("best", run, "--emit", "torch", "--weights", "-o", out).exit_code == 0
        before = _files(disk)
        _fill(disk)
        r = invoke("best", run, "--trial", other, "--emit", "torch", "--weights", "-o", out)
        assert r.exit_code == 2 and "No space left on device" in r.stderr, r.output
        (disk / "filler").unlink()
        assert _files(disk) == before
        again = invoke("best", run, "--trial", other, "--emit", "torch", "--weights", "-o", out)
        assert again.exit_code == 0 and _files(disk) != before, again.output


def test_a_write_refused_part_way_leaves_every_output_byte_for_byte(finished, tmp_path):
    """As a process under a 64 KiB file-size limit (test_full_disk.py; needs no root): the model (10 KB)
    and its sidecar fit, the weights (about 400 KB) do not; the earlier export stays whole, none of its
    files replaced (an in-place write left the earlier weights cut at 64 KiB)."""
    from test_full_disk import error_lines, run_limited

    run, best = finished
    other = 1 - best["arch_id"] if best["arch_id"] in (0, 1) else 0
    out = tmp_path / "out" / "m.py"
    out.parent.mkdir()
    assert invoke("best", run, "--emit", "torch", "--weights", "-o", out).exit_code == 0
    before = _files(out.parent)
    assert {Path("m.py"), Path("m.pt")} <= set(before)  # and the sidecar, m.json
    assert (out.parent / "m.pt").stat().st_size > 64 << 10 > out.stat().st_size
    r = run_limited(["best", run, "--trial", other, "--emit", "torch", "--weights", "-o", out], tmp_path,
                    program="nader.cli", limit=64 << 10)
    assert _files(out.parent) == before, "an output changed when a write failed"
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = error_lines(r.stderr)
    assert line == f"error: cannot write the export {out.with_suffix('.pt')}: File too large; it is unchanged", line


def test_a_second_export_beside_the_first_never_takes_its_companions(finished, tmp_path):
    """`-o best.py --weights` then `-o best.nad --weights` or `-o best.onnx` would share best.pt and best.json:
    the second is refused in one line and the first export stays byte for byte; the same OUT again, and
    a name of its own, still write."""
    run, _ = finished
    out = tmp_path / "out"
    out.mkdir()
    assert invoke("best", run, "--emit", "torch", "--weights", "-o", out / "best.py").exit_code == 0
    first = _files(out)
    assert json.loads((out / "best.json").read_text())["model"].endswith("best.py")
    for argv in (["--emit", "nad", "--weights"], ["--emit", "onnx"]):
        suffix = ".nad" if "nad" in argv else ".onnx"
        r = invoke("best", run, *argv, "-o", out / f"best{suffix}")
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        (line,) = r.stderr.strip().splitlines()
        assert "belongs to the export" in line and "best.py" in line and f"best-{argv[1]}{suffix}" in line, line
        assert _files(out) == first
    assert invoke("best", run, "--emit", "torch", "--weights", "-o", out / "best.py").exit_code == 0  # its own again
    r = invoke("best", run, "--emit", "onnx", "-o", out / "best-onnx.onnx")
    assert r.exit_code == 0, r.output
    assert json.loads((out / "best-onnx.json").read_text())["format"] == "onnx"
    assert json.loads((out / "best.json").read_text())["format"] == "torch"


def test_a_file_of_the_users_where_the_sidecar_goes_is_never_replaced(finished, tmp_path):
    run, _ = finished
    mine = tmp_path / "model.json"
    mine.write_text('{"my": "notes"}\n')
    r = invoke("best", run, "--emit", "nad", "-o", tmp_path / "model.nad")
    assert r.exit_code == 2 and "does not say it is an export's to" in r.stderr, r.output
    assert mine.read_text() == '{"my": "notes"}\n' and not (tmp_path / "model.nad").exists()
