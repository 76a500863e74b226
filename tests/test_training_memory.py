"""Training memory as a budget (`network_cost.training_memory`, `runtime/memory.py`).

The estimate is checked against what autograd really keeps: `saved_tensors_hooks` sees every
tensor the forward saves for the backward, so the bytes it saves are an exact, deterministic
figure to compare with (no timing, no resident-set noise). benchmarks/memory_bench.py compares
the whole estimate with the measured peak.
"""
from __future__ import annotations

import pytest
import torch

from conftest import REPO_ROOT, run_nadc
from nader.compiler.architecture import load_architecture
from nader.compiler.fit import Budget, FitError, fit, preset_budget
from nader.compiler.network import analyze, build_network
from nader.compiler.network_cost import network_model
from nader.runtime import memory
from nader.search.checks import Checker
from nader.search.config import merge
from nader.search.config_file import parse_memory
from nader.search.tree import Tree

EXAMPLE = (REPO_ROOT / "examples" / "resnet_basic.nad").read_text(encoding="utf-8")
GIB = 2 ** 30


def chain(n: int, op: str = "ReLU") -> str:
    lines = ["##Chain##", "0:input", "1:output"] + [f"{k}:{op}" for k in range(2, n + 2)]
    return "\n".join(lines + ["0->2"] + [f"{k}->{k + 1}" for k in range(2, n + 1)] + [f"{n + 1}->1"]) + "\n"


BRANCHY = """##Branchy##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=1)
3:BN
4:Sigmoid
5:Mul
6:Conv2d(out_channels=C,kernel_size=1,stride=1)
7:Add
0->2
2->3
3->4
3,4->5
0->6
5,6->7
7->1
"""


def autograd_saved_bytes(text: str, widths, batch: int) -> int:
    """Bytes of the distinct tensors autograd saves in one training forward (parameters excluded)."""
    model, _ = build_network(text, "nb201", "digits", widths=widths)
    model.train()
    params = {p.data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            seen[ptr] = max(seen.get(ptr, 0), t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.randn(batch, 3, 16, 16))
    return sum(seen.values())


@pytest.mark.parametrize("name,text", [("example", EXAMPLE), ("chain", chain(30)), ("branchy", BRANCHY)])
def test_estimate_is_close_to_what_autograd_saves(name, text):
    widths, batch = [8, 16, 32], 16
    info = analyze(text, "nb201", "digits", widths=widths, budget=Budget(batch_size=batch))
    estimate = info["training_memory"]["activations"]
    saved = autograd_saved_bytes(text, widths, batch)
    # The estimate counts every activation once plus the forward's working set: never under what
    # autograd keeps, and at most twice it (the rest is the backward's gradients, which the
    # benchmark's measured peak includes).
    assert saved <= estimate <= 2 * saved, (name, estimate, saved)


def test_estimate_grows_with_the_chain_and_the_batch():
    a = analyze(chain(10), "nb201", "digits", widths=[8, 16, 32], budget=Budget(batch_size=8))["training_memory"]
    b = analyze(chain(20), "nb201", "digits", widths=[8, 16, 32], budget=Budget(batch_size=8))["training_memory"]
    c = analyze(chain(20), "nb201", "digits", widths=[8, 16, 32], budget=Budget(batch_size=16))["training_memory"]
    assert a["activations"] < b["activations"] and c["activations"] == 2 * b["activations"]
    assert a["parameters"] == b["parameters"] == c["parameters"] > 0  # ReLUs hold no weights


def test_the_longest_relu_chain_is_over_budget_on_a_24_gib_machine(monkeypatch, tmp_path):
    """ReLUs cost no FLOPs, so only memory bounds them: 2,000 nodes, inside every limit."""
    monkeypatch.setattr(memory, "physical_memory", lambda: 24 * GIB)
    limit, where = memory.default_memory_budget("cpu")
    assert limit == 12 * GIB and "24.0 GiB of RAM" in where
    path = tmp_path / "chain.nad"
    path.write_text(chain(1998), encoding="utf-8")
    result = run_nadc(["cost", str(path), "--dataset", "digits"])
    assert result.code == 1 and "over the memory budget: a training step at batch 256" in result.stderr
    # In the search the same candidate is over-budget before it trains.
    checker = Checker("nb201", "digits", [5, 5, 5], merge({"root_text": EXAMPLE, "dataset": "digits"}).budget())
    assert checker.budget.memory == 12 * GIB
    checked = checker.check(chain(1998), Tree())
    assert checked.status == "over-budget" and "over the memory budget" in checked.diagnostics["message"]
    assert checker.check(EXAMPLE, Tree()).status == "proposed"


def test_cost_prints_the_training_memory_and_takes_a_budget(tmp_path):
    path = tmp_path / "a.nad"
    path.write_text(EXAMPLE, encoding="utf-8")
    ok = run_nadc(["cost", str(path), "--dataset", "digits", "--max-memory", "4096"])
    assert ok.code == 0 and "training memory" in ok.stdout and "at batch 256" in ok.stdout
    tight = run_nadc(["cost", str(path), "--dataset", "digits", "--max-memory", "1", "--batch-size", "64"])
    assert tight.code == 1 and "at batch 64 needs about" in tight.stderr
    fixed = run_nadc(["cost", str(path), "--dataset", "digits", "--widths", "8", "--max-memory", "1"])
    assert fixed.code == 1 and "over the memory budget" in fixed.stderr


def test_default_budget_follows_the_cgroup_and_the_gpu_share(monkeypatch, tmp_path):
    limit = tmp_path / "memory.max"
    limit.write_text("1073741824\n")
    monkeypatch.setattr(memory, "_CGROUP_LIMITS", (str(tmp_path / "missing"), str(limit)))
    assert memory.physical_memory() == GIB
    limit.write_text("max\n")
    assert memory.physical_memory() > GIB  # no limit: the machine's RAM
    monkeypatch.setattr(memory, "_cuda_memory", lambda device: 80 * GIB)
    budget, where = memory.default_memory_budget("cuda", trials_per_device=4)
    assert budget == int(80 * GIB * 0.9 / 4) and "over 4 trials" in where


def test_search_budget_uses_the_preset_batch_and_the_flag():
    config = merge({"root_text": EXAMPLE, "dataset": "digits", "preset": "quick", "max_memory": parse_memory("2G")})
    budget = config.budget()
    assert (budget.memory, budget.batch_size) == (2 * GIB, 64)
    table = merge({"root_text": EXAMPLE, "dataset": "cifar10", "evaluator": "table:x.csv"})
    assert table.budget().memory is None  # a table's trials do not train here


@pytest.mark.parametrize("bad", ["0", "-5", "nan", "inf", "12 parsecs", "1e999"])
def test_memory_flags_refuse_nonsense(bad):
    from nader.runtime.errors import ConfigError

    with pytest.raises(ConfigError, match="max-memory"):
        parse_memory(bad)


def test_fit_refuses_rather_than_narrows():
    model = network_model(load_architecture(chain(100), "nb201"), "nb201", [5, 5, 5], 16, 10)
    budget = preset_budget("nb201", "digits").with_memory(GIB, 256)
    with pytest.raises(FitError, match="over the memory budget"):
        fit(model, budget)
