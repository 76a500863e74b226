"""A synthetic NAS-Bench-201 table (every cell), for benchmarking search strategies without the
real benchmark file: `benchmarks/strategies.py --table FILE --space nb201`.

    python benchmarks/nb201_synthetic.py OUT.csv [--seed 0]

It is made up, not measured; figures from it are labelled synthetic. It imitates what matters
to a strategy comparison on NAS-Bench-201's CIFAR-10:

* the test accuracy after 200 epochs (``test_acc@200``) grows with the convolutions that reach
  the output (3x3 more than 1x1), with a skip connection from the input to the output and with
  convolutions in sequence, saturating near NB201's best 94.37 %; zero-output cells sit at 10 %;
* the search signal, the validation accuracy after 12 epochs (``valid_acc@12``), is a noisy,
  lower copy of it (the short schedule ranks cells imperfectly, as NATS-Bench's ``hp=12`` does);
* the seconds per epoch grow with the convolutions (about 140 s for 12 epochs of the ResNet
  cell), so NATS-Bench's 20,000 s CIFAR-10 budget buys about a hundred trials.

Each cell's noise is drawn from a generator seeded by ``--seed`` and the cell, so a table is a
function of its seed.
"""
from __future__ import annotations

import argparse
import csv
import math
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("valid_acc@12", "test_acc@12", "test_acc@200", "epoch_seconds", "params")


def row(cell, seed: int = 0) -> dict:
    from nader.search.spaces import nb201 as S

    if 3 in cell.zero_nodes():
        return {"valid_acc@12": 10.0, "test_acc@12": 10.0, "test_acc@200": 10.0, "epoch_seconds": 6.0,
                "params": 73306}
    eff = cell.effective()
    ops = eff.ops
    n3, n1 = ops.count("nor_conv_3x3"), ops.count("nor_conv_1x1")
    pools, skips = ops.count("avg_pool_3x3"), ops.count("skip_connect")
    residual = ops[S.EDGES.index((3, 0))] == "skip_connect"
    chain = sum(op in ("nor_conv_3x3", "nor_conv_1x1") for op in (ops[0], ops[2], ops[5]))  # 0->1->2->3
    raw = 4.0 * n3 + 2.4 * n1 + 0.6 * pools + 0.4 * skips + 2.5 * residual + 1.2 * chain
    rng = random.Random(f"nb201-synthetic/{seed}/{cell}")
    test200 = 94.4 - 40.0 * math.exp(-raw / 5.0) + rng.gauss(0, 0.35)
    test200 = min(94.37, max(10.0, test200))
    valid12 = 0.85 * test200 - 6.0 + rng.gauss(0, 1.1)
    return {"valid_acc@12": round(valid12, 3), "test_acc@12": round(valid12 - 0.4 + rng.gauss(0, 0.3), 3),
            "test_acc@200": round(test200, 3),
            "epoch_seconds": round(6.0 + 2.6 * n3 + 1.1 * n1 + 0.4 * pools + 0.2 * skips, 2),
            "params": 73306 + 243040 * n3 + 27040 * n1}


def write(path, seed: int = 0) -> Path:
    from nader.search.spaces import nb201 as S

    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["arch", *COLUMNS])
        for cell in S.all_cells():
            values = row(cell, seed)
            w.writerow([str(cell), *(values[c] for c in COLUMNS)])
    return path


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"wrote {write(args.out, args.seed)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
