"""Any trial out (issue 38, point 5): `best --emit` and `Study.export` write every trial of every run
(a Python objective's, a table's) at the widths it was searched with; the weights an objective saved
(`arch.save_weights`) give its recorded accuracy in plain torch; where there are none, `--weights` is
refused in one line; OUT.json states the input and normalisation; `nadc` warns when it builds other
widths than a file's network line records."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

import derived_tables as D
import nader.search as ns
from nader.cli import main
from nader.compiler.cli import cli as nadc_main
from nader.compiler.network_header import read_header
from nader.runtime.data import load_dataset
from nader.search.best_model import ExportError
from nader.search.session import run_search
from nader.search.spaces import nb201
from search_helpers import EXAMPLE, run_records


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def nadc(*args):
    return CliRunner().invoke(nadc_main, [str(a) for a in args])


def _network(path):
    spec = importlib.util.spec_from_file_location(f"emitted_{abs(hash(str(path)))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Network()


def _count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def _normalised(split, mean, std):
    return (split.images.float() - torch.tensor(mean).view(1, -1, 1, 1)) / torch.tensor(std).view(1, -1, 1, 1)


# -- a study whose trials a Python objective trains on digits ------------------------------------------

@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("objective")
    data = load_dataset("digits")
    train_x, valid_x = _normalised(data.train, data.mean, data.std), _normalised(data.valid, data.mean, data.std)

    def objective(arch):
        torch.manual_seed(arch.seed)
        net = arch.module()
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        for start in range(0, 256, 64):  # a few steps: the accuracy is whatever they give
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(train_x[start:start + 64]), data.train.labels[start:start + 64]
                                              ).backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            accuracy = (net(valid_x).argmax(1) == data.valid.labels).float().mean().item() * 100
        if arch.number == 0:  # the root hands its weights over; #1 saves none
            arch.save_weights(net, mean=data.mean, std=data.std)
        return accuracy

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        made = ns.create_study(root=str(EXAMPLE), dataset="digits", depths=[1, 1, 1], storage=str(folder / "run"),
                               strategy="walk")
        made.optimize(objective, n_trials=2)
    finally:
        torch.set_num_threads(threads)
    assert [t.state for t in made.trials] == ["ok", "ok"]
    return ns.load_study(str(folder / "run")), data


def test_the_objectives_weights_give_its_recorded_accuracy_in_plain_torch(study, tmp_path):
    st, data = study
    root = st.trials[0]
    out = tmp_path / "model.py"
    r = invoke("best", st.run_dir, "--trial", 0, "--emit", "torch", "--weights", "-o", out)
    assert r.exit_code == 0, r.output
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["preprocessing"]["mean"] == pytest.approx(list(data.mean))
    assert side["preprocessing"]["std"] == pytest.approx(list(data.std))
    assert side["network"]["widths"] == root.record["widths"] and side["network"]["params"] == root.params
    assert side["input"] == {"shape": [3, 16, 16], "layout": "NCHW", "dtype": "float32", "classes": 10}
    assert side["evaluator"] == "python" and side["weights"] == str(out.with_suffix(".pt"))
    torch.save({"images": data.valid.images, "labels": data.valid.labels}, tmp_path / "valid.pt")
    check = (  # a fresh process with torch alone: the source, the weights and the sidecar's numbers
        "import importlib.util, json, sys, torch\n"
        f"spec = importlib.util.spec_from_file_location('m', {str(out)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        f"net = m.Network(); net.load_state_dict(torch.load({str(out.with_suffix('.pt'))!r}, weights_only=True))\n"
        f"side = json.load(open({str(out.with_suffix('.json'))!r}))['preprocessing']\n"
        f"d = torch.load({str(tmp_path / 'valid.pt')!r}, weights_only=True)\n"
        "x = (d['images'].float() - torch.tensor(side['mean']).view(1, -1, 1, 1)) / torch.tensor(side['std']).view(1, -1, 1, 1)\n"
        "torch.set_num_threads(1)\n"
        "with torch.no_grad():\n"
        "    print(repr((net.eval()(x).argmax(1) == d['labels']).float().mean().item() * 100))\n"
        "assert not [m for m in sys.modules if m.startswith('nader')], 'the toolchain was imported'\n")
    done = subprocess.run([sys.executable, "-I", "-c", check], capture_output=True, text=True, cwd=tmp_path,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == pytest.approx(root.value, abs=1e-9)


def test_study_export_writes_each_format_at_the_searched_widths(study, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    st, _ = study
    paths = st.export(st.trials[0], "torch", tmp_path / "m.py", weights=tmp_path / "w.pt")
    assert paths == [tmp_path / "m.py", tmp_path / "w.pt", tmp_path / "m.json"]
    net = _network(tmp_path / "m.py")
    net.load_state_dict(torch.load(tmp_path / "w.pt", weights_only=True))
    assert st.export(0, "onnx", tmp_path / "n.onnx", weights=True) == [tmp_path / "n.onnx", tmp_path / "n.json"]
    x = torch.randn(4, 3, 16, 16)
    with torch.no_grad():
        expected = net.eval()(x).numpy()
    (got,) = ort.InferenceSession(str(tmp_path / "n.onnx"), providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})
    assert abs(got - expected).max() < 1e-4
    other = st.trials[1]
    st.export(other, "nad", tmp_path / "a.nad")
    assert read_header((tmp_path / "a.nad").read_text())["widths"] == tuple(other.record["widths"])
    r = nadc(tmp_path / "a.nad", "--emit", "torch", "-o", tmp_path / "a.py")
    assert r.exit_code == 0, r.output
    assert _count(_network(tmp_path / "a.py")) == other.params


def test_weights_an_objective_did_not_save_are_refused_in_one_line(study, tmp_path):
    st, _ = study
    with pytest.raises(ExportError, match=r"#1 seed \d+ has no weights: its objective saved none .*save_weights"):
        st.export(1, "torch", tmp_path / "m.py", weights=True)
    r = invoke("best", st.run_dir, "--trial", 1, "--emit", "nad", "--weights", "-o", tmp_path / "b.nad")
    assert r.exit_code == 1 and "Traceback" not in r.output
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: architecture #1 seed") and "arch.save_weights(net)" in line
    assert os.listdir(tmp_path) == []  # nothing written


def test_save_weights_refuses_what_is_no_network_and_bad_normalisation(study):
    st, _ = study
    arch = st.trials[0].arch
    with pytest.raises(ValueError, match=r"the network \(an nn.Module\) or its state_dict"):
        arch.save_weights({"w": [1, 2]})
    with pytest.raises(ValueError, match="std must be finite numbers above 0"):
        arch.save_weights(torch.nn.Linear(2, 2), mean=[0.0], std=[0.0])
    with pytest.raises(ValueError, match="mean and std together"):
        arch.save_weights(torch.nn.Linear(2, 2), mean=[0.0])


def test_trials_read_back_carry_the_arch_their_objective_saw(study):
    st, _ = study
    for t in st.trials:
        assert t.arch is not None and t.arch.number == t.number and t.arch.text == t.text
        assert t.arch.widths == t.record["widths"] and (t.arch.skeleton, t.arch.dataset) == ("nb201", "digits")
        assert t.arch.depths == [1, 1, 1] and t.arch.seed == t.record["seeds"][0]["seed"]
        assert _count(t.arch.module()) == t.params


def test_trials_dataframe_is_a_pandas_frame(tmp_path):
    import pandas  # the dev extra installs it (the `api` extra for users)

    st = ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"], storage=str(tmp_path / "df"),
                         strategy="random")
    st.optimize(lambda arch: float(arch.cell.count("conv")), n_trials=3)
    frame = st.trials_dataframe()
    assert isinstance(frame, pandas.DataFrame) and list(frame["number"]) == [t.number for t in st.trials]
    assert list(frame["values_valid_acc"]) == [t.value for t in st.trials]
    cells = [t.arch.cell for t in st.trials]  # read back: the cell, not only in record["change"]
    assert cells == [str(nb201.cell_of_text(t.text)) for t in st.trials] and all(cells)


# -- a NAS-Bench-201 run answered by a table ----------------------------------------------------------

@pytest.fixture(scope="module")
def table_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("table")
    table = D.write(folder / "table.csv")
    run_search({"space": "nb201", "dataset": "cifar10", "evaluator": f"table:{table}", "preset": "nb201-12",
                "seeds": [777], "strategy": "random", "trials": 3, "run_dir": str(folder / "run")})
    recs = [r for r in run_records(folder / "run") if r["status"] == "ok"]
    assert len(recs) == 3 and len({r["params"] for r in recs}) > 1
    return folder / "run", recs


def test_a_table_trial_exports_at_exactly_its_searched_parameter_count(table_run, tmp_path):
    run, recs = table_run
    for rec in recs:
        out = tmp_path / f"t{rec['arch_id']}.py"
        r = invoke("best", run, "--trial", rec["arch_id"], "--emit", "torch", "-o", out)
        assert r.exit_code == 0, r.output
        assert _count(_network(out)) == rec["params"]  # 1.49 M were fitted before: the skeleton's budget
        side = json.loads(out.with_suffix(".json").read_text())
        assert side["evaluator"] == "table" and side["weights"] is None and side["network"]["widths"] == [16, 32, 64]
        assert side["preprocessing"]["mean"] == [125.3, 123.0, 113.9]  # CIFAR-10's, as NAS-Bench-201 trains


def test_a_table_trial_has_no_weights_said_in_one_line(table_run, tmp_path):
    run, recs = table_run
    r = invoke("best", run, "--trial", recs[0]["arch_id"], "--emit", "torch", "--weights", "-o", tmp_path / "m.py")
    assert r.exit_code == 1
    (line,) = r.stderr.strip().splitlines()
    assert "was looked up in a table" in line and "export it without --weights" in line
    assert os.listdir(tmp_path) == []


def test_best_prints_the_network_line_and_nadc_warns_when_it_builds_other_widths(table_run, tmp_path):
    run, recs = table_run
    rec = recs[-1]
    nad = tmp_path / "a.nad"
    nad.write_text(invoke("best", run, "--trial", rec["arch_id"]).stdout)  # the workaround, now exact
    assert read_header(nad.read_text()) == {"skeleton": "nas-bench-201", "dataset": "cifar10", "depths": (5, 5, 5),
                                            "widths": (16, 32, 64), "classes": 10, "input_size": 32}
    same = nadc(nad, "--network", "nas-bench-201", "--emit", "torch", "-o", tmp_path / "same.py")
    assert same.exit_code == 0 and "warning" not in same.stderr, same.output
    assert _count(_network(tmp_path / "same.py")) == rec["params"]
    other = nadc(nad, "--network", "nb201", "--emit", "torch", "-o", tmp_path / "other.py")
    assert other.exit_code == 0, other.output
    (warning,) = [ln for ln in other.stderr.splitlines() if "warning" in ln]
    assert "not the widths 16,32,64 its network line records" in warning
    assert "--network nas-bench-201 --dataset cifar10 --widths 16,32,64 --depths 5,5,5" in warning
    given = nadc(nad, "--widths", "8", "--emit", "onnx", "-o", tmp_path / "w.onnx")
    assert given.exit_code == 0 and "this network has widths 8,16,32" in given.stderr, given.output


def test_a_trial_without_a_network_is_refused_naming_the_one_to_take(tmp_path):
    run = tmp_path / "run"  # uniform draws meet a cell whose graph an earlier one has (6,334 graphs in 15,625)
    ns.create_study(space="nb201", dataset="cifar10", directions=["maximize"], storage=str(run), strategy="random",
                    seed=0).optimize(lambda arch: 1.0, n_trials=15)
    dup = next(r for r in run_records(run) if r["status"] == "duplicate")
    r = invoke("best", run, "--trial", dup["arch_id"], "--emit", "nad", "-o", tmp_path / "d.nad")
    assert r.exit_code == 1 and f"duplicates #{dup['duplicate_of']}" in r.stderr, r.output
    assert not (tmp_path / "d.nad").exists()
