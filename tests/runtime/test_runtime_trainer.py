"""Presets, the training loop, early termination and the job worker's failure records."""
from __future__ import annotations

import json
import math

import pytest
import torch

from nader.runtime import presets as P
from nader.runtime.errors import ConfigError
from nader.runtime.jobs import Job, Result, resolve_builder, result_metrics, run_job
from nader.runtime.trainer import lr_at

TINY = "runtime_helpers:tiny_builder"


def tiny_job(arch=None, **kw) -> Job:
    options = {"epochs": 2, "threads": 1, **kw.pop("options", {})}
    return Job(arch=json.dumps(arch or {"width": 4}), builder=TINY, dataset=kw.pop("dataset", "digits"),
               preset=kw.pop("preset", "quick"), options=options, **kw)


# --------------------------------------------------------------------------- presets


def test_nb201_preset_is_the_protocol():
    p = P.get_preset("nb201")
    assert (p.epochs, p.batch_size, p.lr, p.momentum, p.nesterov, p.weight_decay, p.lr_min) == \
        (200, 256, 0.1, 0.9, True, 5e-4, 0.0)
    assert p.seeds == (777, 888, 999)
    assert P.get_preset("nb201-12").epochs == 12
    assert P.get_preset("nb201-7").epochs == 7 and P.get_preset("nb201-7").lr == 0.1
    q = P.get_preset("quick")
    assert q.epochs <= 3
    with pytest.raises(ConfigError):
        P.get_preset("nb201-0")
    with pytest.raises(ConfigError):
        P.get_preset("fast")


def test_overrides_are_coerced_and_checked():
    p = P.resolve("nb201-12", {"epochs": "3", "compile": "false", "lr": "0.05", "train_limit": None})
    assert (p.epochs, p.compile, p.lr, p.train_limit) == (3, False, 0.05, None)
    for bad in ({"epochs": 0}, {"epochs": 1.5}, {"amp": "fp8"}, {"compile": "maybe"}):
        with pytest.raises(ConfigError):
            P.resolve("quick", bad)
    with pytest.raises(ConfigError, match="unknown option"):
        P.check_options({"epoch": 3})


def test_cosine_schedule_per_iteration():
    p = P.get_preset("nb201")
    total, spe = 1000, 10
    assert lr_at(0, total, p, spe) == pytest.approx(0.1)
    assert lr_at(500, total, p, spe) == pytest.approx(0.05)
    assert lr_at(total, total, p, spe) == pytest.approx(0.0, abs=1e-12)
    seq = [lr_at(t, total, p, spe) for t in range(total)]
    assert all(a >= b for a, b in zip(seq, seq[1:]))
    w = p.replace(warmup_epochs=1)
    assert lr_at(0, total, w, spe) == pytest.approx(0.01)


# --------------------------------------------------------------------------- jobs


def test_job_and_result_round_trip_json():
    j = tiny_job(seed=888, data_dir="/x", widths=[8, 16, 32], name="a.nad")
    j2 = Job.from_json(j.to_json())
    assert j2 == j and j2.job_id == j.job_id
    assert tiny_job(seed=999).job_id != tiny_job(seed=888).job_id
    # display name, run directory, device and thread count do not change what is computed
    assert Job.from_dict({**j.to_dict(), "name": "b", "run_dir": "/r"}).job_id == j.job_id
    r = Result(job_id="x", seed=1, status="ok", history=[{"epoch": 1, "train_loss": 0.5}], info={"widths": [1]})
    assert Result.from_json(r.to_json()) == r


def test_training_records_everything_and_is_deterministic():
    r = run_job(tiny_job(name="t.nad"))
    assert r.status == "ok", r.error
    assert r.epochs == 2 and len(r.history) == 2 and [h["epoch"] for h in r.history] == [1, 2]
    for k in ("train_loss", "train_acc", "valid_acc", "test_acc"):
        assert getattr(r, k) is not None and math.isfinite(getattr(r, k))
    assert 0 <= r.test_acc <= 100 and r.params > 0 and r.flops > 0 and r.seconds > 0
    assert r.info["num_classes"] == 10 and r.info["input_size"] == 16
    assert r.history[-1]["test_acc"] == r.test_acc
    assert r.history[0]["lr"] > r.history[1]["lr"]
    r2 = run_job(tiny_job(name="t.nad"))
    assert result_metrics(r) == result_metrics(r2)
    r3 = run_job(tiny_job(seed=888))
    assert result_metrics(r3)["history"] != result_metrics(r)["history"]


def test_a_real_model_learns_digits():
    r = run_job(tiny_job({"width": 12}, options={"epochs": 3, "lr": 0.2, "batch_size": 32}))
    assert r.status == "ok"
    assert r.test_acc > 30  # chance is 10%; this run reaches about 47%
    assert r.history[-1]["train_loss"] < r.history[0]["train_loss"]


def test_nan_loss_diverges():
    r = run_job(tiny_job({"width": 4, "nan_after": 2}))
    assert r.status == "diverged" and r.error_kind == "diverged"
    assert "nan" in r.error.lower()
    assert r.epochs == 1 and r.test_acc is None


def test_chance_level_diverges_after_configured_epochs():
    r = run_job(tiny_job({"width": 4, "dead": True}, options={"epochs": 4, "chance_epochs": 2}))
    assert r.status == "diverged" and "chance" in r.error
    assert r.epochs == 2
    # without the option the same run goes to the end
    r = run_job(tiny_job({"width": 4, "dead": True}, options={"epochs": 2}))
    assert r.status == "ok" and r.epochs == 2


def test_failures_become_records():
    r = run_job(tiny_job({"build_error": "node 3: unknown op Foo"}))
    assert (r.status, r.error_kind) == ("failed", "build") and "unknown op Foo" in r.error
    r = run_job(Job(arch="x", builder="nader.no_such_module:build_network"))
    assert (r.status, r.error_kind) == ("failed", "builder-unavailable")
    assert "nader.no_such_module:build_network" in r.error
    r = run_job(Job(arch="x", builder="os.system('echo hi')"))
    assert r.error_kind == "builder-unavailable"
    r = run_job(tiny_job(dataset="cifar10", data_dir="/nonexistent/data"))
    assert r.error_kind == "data" and "Expected layout" in r.error
    r = run_job(tiny_job(preset="nope"))
    assert r.error_kind == "config"
    r = run_job(tiny_job(options={"bogus": 1}))
    assert r.error_kind == "config" and "bogus" in r.error
    r = run_job(tiny_job(dataset="cifar100"))  # no data dir
    assert r.error_kind == "data"


def test_the_compilers_builder_fits_the_runtime_interface():
    from nader.compiler.network import BUILDER, build_network

    assert resolve_builder(BUILDER) is build_network
    r = run_job(Job(arch="", builder=BUILDER, options={"epochs": 1}))
    # an empty architecture is rejected as a build error, not a crash
    assert r.status == "failed" and r.error_kind == "build"


def test_a_job_names_its_builder():
    with pytest.raises(TypeError, match="builder"):
        Job(arch="x")  # the runtime has no default: it names no module of the compiler


def test_in_process_run_restores_thread_count():
    before = torch.get_num_threads()
    run_job(tiny_job(options={"epochs": 1, "threads": 1}))
    assert torch.get_num_threads() == before


def test_compile_failure_falls_back_to_eager(monkeypatch):
    job = tiny_job(options={"epochs": 1, "train_limit": 128, "eval_limit": 64})
    eager = run_job(job)

    def broken_compile(model, *a, **kw):
        def call(x):
            raise RuntimeError("inductor: no C++ compiler")
        return call

    monkeypatch.setattr(torch, "compile", broken_compile)
    r = run_job(tiny_job(options={"epochs": 1, "train_limit": 128, "eval_limit": 64, "compile": True}))
    assert r.status == "ok"
    assert any("trained eagerly" in n for n in r.info["runtime_notes"])
    m1, m2 = result_metrics(eager), result_metrics(r)
    assert {k: v for k, v in m1.items() if k != "job_id"} == {k: v for k, v in m2.items() if k != "job_id"}


def test_torch_compile_trains():
    import shutil

    r = run_job(tiny_job(options={"epochs": 1, "train_limit": 128, "eval_limit": 64, "compile": True}))
    assert r.status == "ok" and math.isfinite(r.train_loss)
    if shutil.which("g++") or shutil.which("c++"):
        assert "runtime_notes" not in r.info  # really compiled
