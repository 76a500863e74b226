"""How well each training-free proxy ranks NAS-Bench-201 cells: Spearman ρ with the table's test
accuracy (and validation accuracy) on a sample of cells, and the time per cell.

For each table (default: the two development tables of ../shared/nb201, GENIUS's CIFAR-100 and
ImageNet16-120 files; CIFAR-10's is held out), ``--sample`` cells (1,000) are drawn uniformly with
``--seed``; every proxy scores each one's network as a search does (`nader.search.proxies`: the
compiler's network at the proxies' fixed small width and depth, each architecture seeded from its
canonical hash; isomorphic cells share one score), and the ensembles rank by the mean of their
members' ranks. A proxy that fails on a cell ranks it last, as the search does. The time is the
wall time per computed score (ms/cell, as the search records it) and this process's CPU time per
score (CPU ms: what a quiet machine's wall time would be), network build included, on one torch
thread; the machine's load average is printed beside it.

The proxies that need images (naswot, jacov, snip, grad_norm) read ``--data-dir`` when given; no
images are on the development machines, so without it they are skipped, or with ``--noise``
computed on a fixed batch of Gaussian images and random labels: a stand-in that is not their
papers' method, labelled so in the output.

    python benchmarks/proxies_bench.py [--sample 1000] [--proxies synflow,zen,params,flops]
        [--ensembles synflow+zen] [--noise] [--cache FILE] [--width 8 --depth 1 --batch 16]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NADER_SHARED") or REPO.parent / "shared") / "nb201"  # as tests/conftest.py finds it
TABLES = {"cifar100": "genius_nasbench201_cifar100.json", "imagenet16-120": "genius_nasbench201_imagenet.json"}


def load_table(path: Path) -> dict:
    """{cell string: (validation, test)} of a GENIUS-style table ({cell: {val_acc_200, test_acc_200}})."""
    data = json.loads(path.read_text())
    return {cell: (row["val_acc_200"], row["test_acc_200"]) for cell, row in data.items()}


def noise_batch(batch: int, size: int, classes: int):
    import torch

    g = torch.Generator().manual_seed(0)
    return ("noise", torch.randn((batch, 3, size, size), generator=g), torch.randint(0, classes, (batch,), generator=g))


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(TABLES), help=f"[default: {','.join(TABLES)}]")
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--proxies", default=None, help="[default: every proxy]")
    ap.add_argument("--ensembles", default="synflow+zen,synflow+params,synflow+zen+params",
                    help="ensembles to rank too (comma-separated; '' for none)")
    ap.add_argument("--data-dir", default=None, help="images for the proxies that need them")
    ap.add_argument("--noise", action="store_true", help="without --data-dir: Gaussian images for those proxies")
    ap.add_argument("--cache", default=None, help="a proxy cache file (shared with searches: --proxy-cache)")
    ap.add_argument("--width", type=int, default=None)
    ap.add_argument("--depth", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--resolution", type=int, default=None)
    args = ap.parse_args(argv)

    from scipy.stats import spearmanr

    from nader.compiler.datasets import dataset_info
    from nader.search.checks import arch_hash_of_text
    from nader.search.proxies import all_proxies, mean_ranks, members
    from nader.search.proxy_scorer import SETTINGS, ProxyScorer
    from nader.search.spaces import nb201
    from nader.search.store import ProxyCache

    settings = SETTINGS
    for name in ("width", "depth", "batch", "resolution"):
        if getattr(args, name) is not None:
            settings = type(settings)(**{**settings.__dict__, name: getattr(args, name)})
    names = [p for p in (args.proxies.split(",") if args.proxies else all_proxies()) if p]
    ensembles = [e for e in (args.ensembles or "").split(",") if e]
    for spec in ensembles:
        members(spec)
    cache = ProxyCache.open(args.cache) if args.cache else None
    print(f"proxies on NAS-Bench-201 ({args.sample} cells per table, seed {args.seed}; proxy network: base width "
          f"{settings.width}, {settings.depth} cell(s) per stage, input {settings.resolution} px at most, batch "
          f"{settings.batch}; one torch thread; load "
          f"average {os.getloadavg()[0]:.2f} at the start)")
    for dataset in [d for d in args.datasets.split(",") if d]:
        path = SHARED / TABLES[dataset]
        if not path.is_file():
            print(f"  {dataset}: skipped: {path} is not here (the development tables live in ../shared/nb201)")
            continue
        table = load_table(path)
        cells = sorted(table)
        random.Random(args.seed).shuffle(cells)
        cells = cells[:args.sample]
        t0 = time.perf_counter()
        items = [(arch_hash_of_text(nb201.architecture(c), nb201.SKELETON), nb201.architecture(c)) for c in cells]
        hash_s = (time.perf_counter() - t0) / len(cells)
        valid = [table[c][0] for c in cells]
        test = [table[c][1] for c in cells]
        info = dataset_info(dataset)
        scores, rows = {}, []
        for name in names:
            proxy = all_proxies()[name]
            images = None
            if proxy.data and not args.data_dir:
                if not args.noise:
                    rows.append((name, None, None, None, None, None, "needs images: give --data-dir (or --noise)"))
                    continue
                images = noise_batch(settings.batch, settings.input_size(dataset), info.num_classes)
            scorer = ProxyScorer(name, skeleton=nb201.SKELETON, dataset=dataset, data_dir=args.data_dir,
                                 caches=[cache] if cache and images is None else [], settings=settings, images=images)
            cpu = time.process_time()
            got = scorer.scores(items)[name]
            cpu = time.process_time() - cpu
            scores[name] = got
            filled = _filled(got)
            rho_t, rho_v = spearmanr(filled, test)[0], spearmanr(filled, valid)[0]
            per = scorer.seconds / scorer.evaluated if scorer.evaluated else None
            note = "Gaussian images and random labels: not the paper's method" if images is not None else ""
            failed = sum(s is None for s in got)
            if failed:
                note = (note + "; " if note else "") + f"{failed} cells without a score (ranked last)"
            cpu_per = cpu / scorer.evaluated if scorer.evaluated else None
            rows.append((name, rho_t, rho_v, per, cpu_per, scorer.evaluated, note))
        for spec in ensembles:
            parts = members(spec)
            if not all(p in scores for p in parts):
                rows.append((spec, None, None, None, None, None, "a member was skipped"))
                continue
            mean = [-r for r in mean_ranks({p: scores[p] for p in parts})]
            rows.append((spec, spearmanr(mean, test)[0], spearmanr(mean, valid)[0], None, None, None,
                         "mean of the members' ranks"))
        distinct = len({h for h, _ in items})
        print(f"  {dataset} ({path.name}): {len(cells)} cells, {distinct} distinct networks; canonical hash "
              f"{hash_s * 1000:.2f} ms a cell")
        print(f"    {'proxy':<22} {'ρ test':>7} {'ρ valid':>8} {'ms/cell':>8} {'CPU ms':>7} {'computed':>9}")
        for name, rt, rv, per, cpu_per, n, note in rows:
            cols = (f"{rt:+.3f}" if rt is not None else "-", f"{rv:+.3f}" if rv is not None else "-",
                    f"{per * 1000:.1f}" if per is not None else "-",
                    f"{cpu_per * 1000:.1f}" if cpu_per is not None else "-", str(n) if n is not None else "-")
            print(f"    {name:<22} {cols[0]:>7} {cols[1]:>8} {cols[2]:>8} {cols[3]:>7} {cols[4]:>9}  {note}".rstrip())
    print(f"  load average at the end: {os.getloadavg()[0]:.2f}")
    if cache is not None:
        cache.close()
    return 0


def _filled(scores):
    """Scores with a missing one below every other (the search ranks it last)."""
    present = [s for s in scores if s is not None]
    low = (min(present) - 1.0) if present else 0.0
    return [low if s is None else s for s in scores]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
