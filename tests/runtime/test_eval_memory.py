"""`nader-search eval` refuses, as `run` does, a network whose training step is over the memory budget
(issue 41, finding 15: a 1,990-ReLU chain trained up to 11.4 GB where `run` refused it at 19.6 GB): one
line naming the fix, exit 2, before anything trains."""
from __future__ import annotations

from click.testing import CliRunner

from nader.cli import main
from nader.runtime import memory
from search_helpers import EXAMPLE


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_eval_refuses_a_network_over_the_default_memory_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "default_memory_budget", lambda device=None, trials=1: (2**20, "a test's MiB"))
    r = invoke("eval", EXAMPLE, "--dataset", "digits", "--epochs", "1", "--run-dir", tmp_path / "run")
    assert r.exit_code == 2, r.output
    (line,) = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert "over the memory budget" in line and "the budget is 1 MiB" in line and "--max-memory" in line, line
    assert "seed" not in r.stdout  # no job trained


def test_eval_takes_max_memory_as_run_does(tmp_path):
    refused = invoke("eval", EXAMPLE, "--dataset", "digits", "--max-memory", "2M", "--epochs", "1")
    assert refused.exit_code == 2 and "the budget is 2 MiB" in refused.stderr, refused.output
    bad = invoke("eval", EXAMPLE, "--max-memory", "nan")
    assert bad.exit_code == 2 and "max-memory" in bad.output and "Traceback" not in bad.output


def test_a_chain_of_relus_is_refused_at_runs_estimate(tmp_path):
    """The finding's network: the estimate is the one `run` refuses with, no training happens."""
    n = 1990
    lines = ["##Chain##", "0:input", "1:output", *(f"{i}:ReLU" for i in range(2, n + 2)), "0->2",
             *(f"{i}->{i + 1}" for i in range(2, n + 1)), f"{n + 1}->1"]
    arch = tmp_path / "chain.nad"
    arch.write_text("\n".join(lines) + "\n")
    r = invoke("eval", arch, "--dataset", "digits", "--max-memory", "12G")
    assert r.exit_code == 2 and "needs about 19,603 MiB, the budget is 12,288 MiB" in r.stderr, r.output
