"""Training memory: the compiler's analytic estimate against the measured peak.

`nadc cost` and the search's checks refuse a candidate whose training step would not fit the
memory budget, from an estimate made without building anything
(`nader.compiler.network_cost.training_memory`: every activation the forward keeps for the
backward, the forward's working set, and weights, gradients and momentum). This script trains
each case for a few SGD steps in a fresh process and measures what the step really took:

* CPU: the process's peak resident set (`ru_maxrss`) minus its resident set just before the
  model was built (torch imported, the batch made);
* CUDA: `torch.cuda.max_memory_allocated` minus the batch's own bytes.

Cases: the bundled example and generated chains of ReLUs (which cost no FLOPs, so no budget
but memory bounds them), on digits-sized inputs (16x16). It prints one row per case:
estimate, measured, their ratio, and whether the default budget on this machine would refuse
it. The chain of 2,000 ReLUs is estimated only (it takes about 10 GB to train).

    python benchmarks/memory_bench.py [--device cpu|cuda] [--batch 64] [--steps 2]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def chain(n: int) -> str:
    """A base block of `n` ReLUs in a row (the skeleton's standard stem and downsample)."""
    lines = ["##Chain##", "0:input", "1:output"] + [f"{k}:ReLU" for k in range(2, n + 2)]
    lines += ["0->2"] + [f"{k}->{k + 1}" for k in range(2, n + 1)] + [f"{n + 1}->1"]
    return "\n".join(lines) + "\n"


CASES = {
    "examples/resnet_basic.nad": (ROOT / "examples" / "resnet_basic.nad").read_text(),
    "chain of 50 ReLUs": chain(50),
    "chain of 200 ReLUs": chain(200),
    "chain of 500 ReLUs": chain(500),
}
ESTIMATE_ONLY = {"chain of 1,998 ReLUs (2,000 nodes, the limit)": chain(1998)}

CHILD = r"""
import json, resource, sys
import torch
text, dataset, batch, steps, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.manual_seed(0)
torch.set_num_threads(1)
from nader.compiler.network import build_network
cuda = device.startswith("cuda")
x = torch.randn(batch, 3, 16, 16, device=device)
y = torch.randint(0, 10, (batch,), device=device)
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
def step(model, x, y):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
# Warm-up on a small network, so that code paged in and the framework's own buffers are not counted.
warm, _ = build_network(open(sys.argv[6]).read(), "nb201", dataset, widths=[4, 8, 16])
step(warm.to(device), x[:2], y[:2])
del warm
base = rss()
if cuda:
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
model, info = build_network(text, "nb201", dataset)
model = model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for _ in range(steps):
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
if cuda:
    torch.cuda.synchronize()
    measured = torch.cuda.max_memory_allocated() - start
else:
    measured = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
print(json.dumps({"measured": measured, "widths": info["widths"]}))
"""


def estimate(text: str, dataset: str, batch: int) -> dict:
    from nader.compiler.fit import preset_budget
    from nader.compiler.network import analyze

    info = analyze(text, "nb201", dataset, budget=preset_budget("nb201", dataset).with_memory(None, batch))
    return {"estimate": info["training_memory"]["total"], "widths": info["widths"]}


def measure(text: str, dataset: str, batch: int, steps: int, device: str) -> dict:
    warm = str(ROOT / "examples" / "resnet_basic.nad")
    done = subprocess.run([sys.executable, "-c", CHILD, text, dataset, str(batch), str(steps), device, warm],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--dataset", default="digits")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from nader.runtime.memory import default_memory_budget

    limit, where = default_memory_budget(args.device)
    print(f"device {args.device}, batch {args.batch}, {args.steps} SGD steps, {args.dataset} (16x16); "
          f"default budget {limit / 2**20:,.0f} MiB ({where})")
    print("| case | widths | estimate MiB | measured MiB | estimate/measured | default budget |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for name, text in {**CASES, **ESTIMATE_ONLY}.items():
        est = estimate(text, args.dataset, args.batch)
        verdict = "refused" if est["estimate"] > limit else "fits"
        if name in ESTIMATE_ONLY:
            got, ratio = "not run", "-"
        else:
            m = measure(text, args.dataset, args.batch, args.steps, args.device)
            if "error" in m:
                got, ratio = f"error: {m['error'][:60]}", "-"
            else:
                got = f"{m['measured'] / 2**20:,.0f}"
                ratios.append(est["estimate"] / max(1, m["measured"]))
                ratio = f"{ratios[-1]:.2f}"
        widths = ",".join(map(str, est["widths"]))
        print(f"| {name} | {widths} | {est['estimate'] / 2**20:,.0f} | {got} | {ratio} | {verdict} |", flush=True)
    if ratios:
        print(f"estimate/measured: min {min(ratios):.2f}, max {max(ratios):.2f} over {len(ratios)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
