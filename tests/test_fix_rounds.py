"""`nadc fix` reaches a fixed point or says it stopped (issue 41, finding 4: on a hostile block the first
run left 17 errors and a second fixed 9 more, with no word that the first had stopped early)."""
from __future__ import annotations

import json
import random

from conftest import run_nadc

OPS = ("Conv2d(out_channels=C,kernel_size=3,stride=1)", "BN", "ReLU")
SLIPS = {"Conv2d": "Conv2D", "BN": "BatchNorm", "ReLU": "Relu"}


def hostile(nodes: int = 300, slips: int = 30, seed: int = 1) -> str:
    """A long chain with a slip on many lines: each repair's budget of verifications runs out long before
    every slip is fixed (a larger file gets fewer verifications per repair)."""
    rng = random.Random(seed)
    lines = ["##Big##", "0:input", "1:output", *(f"{i}:{rng.choice(OPS)}" for i in range(2, nodes))]
    for k in rng.sample(range(3, len(lines)), slips):
        op = next(o for o in SLIPS if o in lines[k])
        lines[k] = lines[k].replace(op, SLIPS[op])
    edges = ["0->2", *(f"{i}->{i + 1}" for i in range(2, nodes - 1)), f"{nodes - 1}->1"]
    return "\n".join(lines + edges) + "\n"


def test_fix_runs_to_a_fixed_point(tmp_path):
    path = tmp_path / "hostile.nad"
    path.write_text(hostile())
    first = run_nadc(["fix", str(path)])
    assert "note:" not in first.stderr, first.stderr
    fixed = path.read_text()
    again = run_nadc(["fix", "--format", "json", str(path)])
    (record,) = json.loads(again.stdout)
    assert path.read_text() == fixed and record["applied"] == [] and not record["changed"]
    assert record["stopped"] is None and record["rounds"] == 1


def test_fix_says_when_it_stopped_early(tmp_path):
    path = tmp_path / "hostile.nad"
    path.write_text(hostile())
    one = run_nadc(["fix", "--max-rounds", "1", "--format", "json", str(path)])
    (record,) = json.loads(one.stdout)
    assert record["stopped"] == "rounds" and record["rounds"] == 1 and "--max-rounds" in record["note"], record
    path.write_text(hostile())
    text = run_nadc(["fix", "--max-rounds", "1", "--check", str(path)])
    assert f"note: {path}: stopped after 1 round with" in text.stderr and "--max-rounds" in text.stderr, text.stderr
