"""Helpers for the search's tests: small real searches, fault injection, a scripted strategy.

Searches here train the real networks built from block text, made small: one block per stage,
one epoch on 256 digits, one torch thread.

`faulty_builder` builds the network exactly as `build_network` does and then injects the fault
named by a `# FAULT: KIND [PATH]` comment line in the architecture text (comments are kept in
the text a job carries):

    nan         the loss turns NaN after the first training step (the runtime calls it diverged)
    oom         the forward pass raises MemoryError (the runtime's out-of-memory path)
    kill PATH   the worker SIGKILLs itself at the second training step unless PATH exists; PATH
                is created first, so the retry after a resume survives
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sqlite3
from pathlib import Path

import torch.nn as nn

from nader.compiler.network import build_network
from nader.search.candidate import Candidate
from nader.search.strategies.base import Option, Strategy

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "resnet_basic.nad"
ROOT_TEXT = EXAMPLE.read_text(encoding="utf-8")
# A residual base block unlike the root's: what the scripted LLMs of the search tests propose.
WIDE = """##Wide##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,bias=0)
3:BN
4:ReLU
5:Add
0->2
2->3
3->4
4,0->5
5->1
"""
FAULTY = "search_helpers:faulty_builder"
# What differs between two runs of the same search: when and in which session things happened.
VOLATILE = {"created", "finished", "started", "session", "seconds", "updated"}


def settings(run_dir, **overrides) -> dict:
    """A small, fast search on digits (SearchConfig fields)."""
    base = {"root": str(EXAMPLE), "dataset": "digits", "preset": "quick", "depths": [1, 1, 1], "epochs": 1,
            "train_options": {"train_limit": 256, "eval_limit": 128}, "threads": 1, "run_dir": str(run_dir),
            "trials": 3, "strategy": "walk"}
    base.update(overrides)
    return base


class FaultyNet(nn.Module):
    def __init__(self, net: nn.Module, kind: str, marker: str = ""):
        super().__init__()
        self.net, self.kind, self.marker = net, kind, marker
        self.steps = 0

    def forward(self, x):
        if self.training:
            self.steps += 1
            if self.kind == "oom":
                raise MemoryError("simulated allocation failure")
            if self.kind == "kill" and self.steps >= 2 and not Path(self.marker).exists():
                Path(self.marker).write_text("killed once\n")
                os.kill(os.getpid(), signal.SIGKILL)
        out = self.net(x)
        if self.kind == "nan" and self.training and self.steps > 1:
            out = out * float("nan")
        return out


def faulty_builder(arch_text, skeleton="nb201", dataset="cifar10", *, widths=None, depths=None):
    model, info = build_network(arch_text, skeleton, dataset, widths=widths, depths=depths)
    m = re.search(r"^# FAULT: (\w+)(?: (\S+))?", arch_text, re.M)
    if m:
        model = FaultyNet(model, m.group(1), m.group(2) or "")
    return model, info


def with_fault(text: str, kind: str, marker: str = "") -> str:
    return f"# FAULT: {kind} {marker}".rstrip() + "\n" + text


class ScriptedStrategy(Strategy):
    """Proposes the texts of a JSON file in order, each from the root; then waits (test double
    of a proposer whose output the test controls)."""

    name = "scripted"
    summary = "test double"
    options = {"script": Option(str, "", "JSON list of architecture texts (null: nothing produced)"),
               "cost": Option(float, 0.0, "dollars recorded per proposal")}

    def __init__(self, **options):
        super().__init__(**options)
        self.texts = json.loads(Path(self.settings["script"]).read_text()) if self.settings["script"] else []
        self.told = []

    def ask(self, tree, rng):
        self._index = sum(1 for n in tree if n.parent_id is not None)
        return tree.root if self._index < len(self.texts) else None

    def propose(self, parent, rng):
        index = self._index
        if index >= len(self.texts):
            return None
        self._index += 1
        text = self.texts[index]
        cost = self.settings["cost"]
        if text is None:
            return Candidate(None, operator="scripted", error="the script has no text here", cost_usd=cost,
                             tokens_in=10, tokens_out=5)
        return Candidate(text, operator="scripted", change={"index": index}, cost_usd=cost, tokens_in=10,
                         tokens_out=5)

    _index = 0

    def tell(self, node, rng):
        self.told.append(node.arch_id)


def script(tmp_path, texts) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(texts))
    return str(path)


def tree_rows(run_dir, *, metrics=True) -> list:
    """The tree as comparable rows (no timings)."""
    import sqlite3

    conn = sqlite3.connect(Path(run_dir) / "runs.sqlite")
    cols = "arch_id, parent_id, status, hash, operator, change, params, flops, widths"
    if metrics:
        cols += ", valid_acc, test_acc"
    rows = conn.execute(f"SELECT {cols} FROM archs ORDER BY arch_id").fetchall()
    conn.close()
    return rows


class TableEvaluator:
    """Test double of a tabular benchmark: answers at once from a table keyed by architecture
    hash (filled on first sight from a hash of the text), two results at a time."""

    capacity = 2

    def __init__(self):
        self.queue = []
        self.table = {}
        self.submitted = []
        self.closed = False

    def score(self, text):
        import hashlib

        return 50 + int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) % 5000 / 100

    def submit(self, trial):
        self.submitted.append(trial.arch_id)
        self.queue.append(trial)

    def pending(self):
        return sum(len(t.seeds) for t in self.queue)

    def idle(self):
        return max(0, self.capacity - self.pending())

    def wait(self, timeout=None):
        from nader.search.evaluator import SeedOutcome

        trial = self.queue.pop(0)
        acc = self.score(trial.text)
        return [SeedOutcome(trial.arch_id, s, "ok", valid_acc=acc, test_acc=acc - 1, seconds=0.0)
                for s in trial.seeds]

    def close(self, abort=False):
        self.closed = True


def run_records(run_dir) -> list:
    """Every record of a run's tree, read as `nader-search export` reads them."""
    from nader.search import records
    from nader.search.store import RunReader

    with RunReader(run_dir, full_check=False) as reader:
        return records.records(reader)


class HashEvaluator:
    """Answers a trial at once from a hash of its text; one trial at a time (so the order of
    results, and every decision, is a function of the tree)."""

    def __init__(self):
        self.queue = []

    def submit(self, trial):
        self.queue.append(trial)

    def pending(self):
        return sum(len(t.seeds) for t in self.queue)

    def idle(self):
        return 0 if self.queue else 1

    def wait(self, timeout=None):
        from nader.search.evaluator import SeedOutcome

        trial = self.queue.pop(0)
        acc = 50 + int(hashlib.sha256(trial.text.encode()).hexdigest()[:4], 16) % 4000 / 100
        return [SeedOutcome(trial.arch_id, s, "ok", valid_acc=acc, test_acc=acc - 1, seconds=0.0) for s in trial.seeds]

    def close(self, abort=False):
        pass


def arch_rows(run) -> list:
    """Every architecture's whole row of a run, without the columns that say when (`VOLATILE`)."""
    conn = sqlite3.connect(Path(run) / "runs.sqlite")
    conn.row_factory = sqlite3.Row
    rows = [{k: r[k] for k in r.keys() if k not in VOLATILE}
            for r in conn.execute("SELECT * FROM archs ORDER BY arch_id")]
    conn.close()
    return rows
