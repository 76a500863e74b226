"""`make demo`: compile the bundled example end to end on this machine.

Parses and formats examples/resnet_basic.nad, verifies every block for every square size,
builds the PyTorch modules and runs them, trains the network on the embedded digits
data set with the `quick` preset, then runs a short search from it (8 trials of
regularized evolution with the compiler's mutations), prints the best architecture and
writes the search's HTML report to runs/demo/report.html.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent / "resnet_basic.nad"


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def nadc(*args: str) -> int:
    return subprocess.call([sys.executable, "-m", "nader.compiler.cli", *args])


def main() -> int:
    step(f"nadc {EXAMPLE.name} --emit ir  (parse; the readable IR)")
    nadc(str(EXAMPLE), "--emit", "ir")
    step("nadc fmt  (the canonical form)")
    nadc("fmt", str(EXAMPLE))
    step("nadc verify  (structure and shapes, for every square input size)")
    if nadc("verify", str(EXAMPLE)) != 0:
        return 1

    import torch
    from nader.compiler.backends.torch_backend import build_torch
    from nader.dsl import parse_file

    step("build_torch and a forward/backward pass at C=16, 32x32")
    program = parse_file(EXAMPLE).program
    for block in program.blocks:
        stem = block.name.endswith("_stem")
        module = build_torch(block, 3 if stem else 16, 16 if stem else None)
        x = torch.randn(2, 3 if stem else 16, 32, 32)
        y = module(x)
        y.sum().backward()
        params = sum(p.numel() for p in module.parameters())
        print(f"{block.name:<24} {tuple(x.shape)} -> {tuple(y.shape)}  {params:,} parameters")

    try:
        from nader.compiler.network import build_network  # noqa: F401
    except ImportError:
        print("\n(network assembly is not installed yet: skipping training)")
        return 0
    step("nader-search eval: train on the embedded digits set (quick preset)")
    start = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "nader.cli", "eval", str(EXAMPLE), "--dataset", "digits",
                            "--preset", "quick"])
    print(f"({time.perf_counter() - start:.0f} s)")
    if code != 0:
        return code

    run_dir = Path("runs") / "demo"
    shutil.rmtree(run_dir, ignore_errors=True)  # the demo starts a fresh search each time
    run_dir = str(run_dir)
    step(f"nader-search run --from {EXAMPLE.name} --trials 8: a short search (rea, digits, quick preset)")
    start = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "nader.cli", "run", "--from", str(EXAMPLE),
                            "--trials", "8", "--run-dir", run_dir])
    print(f"({time.perf_counter() - start:.0f} s)")
    if code != 0:
        return code
    step("nader-search status: the modification tree")
    subprocess.call([sys.executable, "-m", "nader.cli", "status", run_dir])
    step("nader-search best: the best architecture, ready for nadc")
    code = subprocess.call([sys.executable, "-m", "nader.cli", "best", run_dir])
    if code != 0:
        return code
    step("nader-search report: the search as one HTML file (open it in a browser)")
    return subprocess.call([sys.executable, "-m", "nader.cli", "report", run_dir])


if __name__ == "__main__":
    sys.exit(main())
