"""Training throughput: the NADER runtime against a conventional PyTorch training script.

Both sides train the NAS-Bench-201 ResNet (stem conv3-BN-ReLU; three stages of five basic
blocks at widths C, 2C, 4C; a downsample block between stages; global average pooling; a
linear classifier) with NAS-Bench-201's optimiser (SGD, Nesterov, momentum 0.9, weight decay
5e-4, per-step cosine learning rate), batch 256, random crop 32 pad 4 and horizontal flip.

* runtime:  the network built from its block text by ``nader.compiler.network.build_network``
            (falls back to the hand-written module below, with a note, when the compiler is not
            importable), trained by ``nader.runtime.trainer.Trainer`` on the in-memory uint8
            dataset with batch-wise device-side augmentation.
* baseline: the same network written by hand in PyTorch (``NB201ResNet`` below), fed by a
            ``torch.utils.data.DataLoader`` over a ``Dataset`` that crops, flips and normalises
            one sample at a time (torchvision-style, written here: torchvision is not used).

The two run interleaved step by step in one process (a runtime step, then a baseline step that
loads its own batch) so that both see the same machine load; the first epoch is warm-up and the
throughputs are images over each side's own time in the remaining epochs. The ratio is the
median over adjacent step pairs of runtime/baseline throughput, which cancels load drift.
On CUDA both sides use channels-last and bf16/fp16 autocast; on the CPU the baseline keeps the
conventional contiguous layout while the runtime uses its default, channels-last (about 1.15x here,
where the data pipeline alone gives about 1.0x); the baseline's DataLoader uses
pinned memory and worker processes. Images are synthetic uint8 CIFAR-sized
arrays unless --data-dir holds CIFAR-10 (nothing is downloaded). Throughput is reported, not
asserted; the target is a ratio >= 1.0.

    python benchmarks/train_bench.py                   # CPU (and CUDA when present), eager and compiled
    python benchmarks/train_bench.py --modes eager     # skip torch.compile
    python benchmarks/train_bench.py --device cuda --images 51200
    python benchmarks/train_bench.py --trials-per-gpu 6 # fix K instead of choosing it

With CUDA it also reports trials per GPU-hour at the nb201-12 preset for K = 1 and for the K
that the pool executor chooses, and the projected wall time of the 200-epoch protocol for one
network (benchmarks/gpu_trials.py); without CUDA it says "no CUDA device" for those figures.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# NAS-Bench-201's ResNet in the block language (the same graph as the hand-written module).
RESNET_NAD = """\
##ResNetBasicBlock##
0:input
1:output
2:Conv2d(out_channels=C,kernel_size=3,stride=1)
3:BN
4:ReLU
5:Conv2d(out_channels=C,kernel_size=3,stride=1)
6:BN
7:ReLU
8:Add
0->2
2->3
3->4
4->5
5->6
6->8
0->8
8->7
7->1
##ResNetBasicBlock_stem##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3,stride=1)
3:BN
4:ReLU
0->2
2->3
3->4
4->1
##ResNetBasicBlock_downsample##
0:input
1:output
2:Conv2d(out_channels=dim,kernel_size=3,stride=2)
3:BN
4:ReLU
5:Conv2d(out_channels=dim,kernel_size=3,stride=1)
6:BN
7:ReLU
8:AvgPool2d(kernel_size=2,stride=2)
9:Conv2d(out_channels=dim,kernel_size=1,stride=1)
10:Add
0->2
2->3
3->4
4->5
5->6
0->8
8->9
9->10
6->10
10->7
7->1
"""

CIFAR_MEAN = (125.3, 123.0, 113.9)
CIFAR_STD = (63.0, 62.1, 66.7)


# --------------------------------------------------------------------------- hand-written baseline network


def conv_bn(cin, cout, stride=1, relu=True):
    layers = [nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=False))
    return nn.Sequential(*layers)


class BasicBlock(nn.Module):
    """conv3-BN-ReLU-conv3-BN, identity added, then ReLU."""

    def __init__(self, c):
        super().__init__()
        self.a, self.b = conv_bn(c, c), conv_bn(c, c, relu=False)

    def forward(self, x):
        return F.relu(self.b(self.a(x)) + x)


class DownBlock(nn.Module):
    """conv3 s2-BN-ReLU-conv3-BN plus avgpool2 + conv1x1 shortcut, added, then ReLU."""

    def __init__(self, cin, cout):
        super().__init__()
        self.a, self.b = conv_bn(cin, cout, 2), conv_bn(cout, cout, relu=False)
        self.pool, self.proj = nn.AvgPool2d(2, 2), nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        return F.relu(self.b(self.a(x)) + self.proj(self.pool(x)))


class NB201ResNet(nn.Module):
    def __init__(self, c=16, n=5, num_classes=10):
        super().__init__()
        layers, w = [conv_bn(3, c)], c
        for stage in range(3):
            if stage:
                layers.append(DownBlock(w, 2 * w))
                w *= 2
            layers += [BasicBlock(w) for _ in range(n)]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(w, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


# --------------------------------------------------------------------------- conventional per-sample input pipeline


class PerSampleCIFAR(torch.utils.data.Dataset):
    """Random crop with zero padding, horizontal flip, to-float and normalise, one sample at a time."""

    def __init__(self, images_u8: np.ndarray, labels: np.ndarray, pad=4, flip=True):
        self.images = images_u8  # N×3×H×W uint8
        self.labels = labels
        self.pad, self.flip = pad, flip
        self.mean = torch.tensor(CIFAR_MEAN).view(3, 1, 1) / 255.0
        self.std = torch.tensor(CIFAR_STD).view(3, 1, 1) / 255.0

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = torch.from_numpy(self.images[i])
        h, w = img.shape[1:]
        p = self.pad
        padded = F.pad(img, (p, p, p, p))
        top, left = np.random.randint(0, 2 * p + 1, size=2)
        img = padded[:, top:top + h, left:left + w]
        if self.flip and np.random.rand() < 0.5:
            img = img.flip(-1)
        img = img.float().div_(255.0).sub_(self.mean).div_(self.std)
        return img, int(self.labels[i])


class Baseline:
    """A conventional training script, driven one step at a time."""

    def __init__(self, model, images, labels, device, batch, epochs, loader_workers, amp_dtype, channels_last):
        self.model = model.to(device)
        if channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.device, self.amp_dtype, self.channels_last = device, amp_dtype, channels_last
        ds = PerSampleCIFAR(images, labels)
        self.loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=loader_workers,
                                                  pin_memory=device.type == "cuda", drop_last=False,
                                                  persistent_workers=loader_workers > 0)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
        self.sched = torch.optim.lr_scheduler.CosineAnnealingLR(self.opt, T_max=epochs * len(self.loader))
        self.it = None

    def step(self) -> int:
        """Load the next batch (a new epoch when the last one is used up) and train on it."""
        self.model.train()
        if self.it is None:
            self.it = iter(self.loader)
        try:
            x, y = next(self.it)
        except StopIteration:
            self.it = iter(self.loader)
            x, y = next(self.it)
        x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None):
            loss = F.cross_entropy(self.model(x), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.sched.step()
        return y.shape[0]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------- runtime side


def runtime_network(width: int, dataset="cifar10"):
    """(module, label): the DSL-built network, or the hand-written one when the compiler is absent."""
    try:
        from nader.compiler.network import build_network
    except ImportError as exc:
        # TODO(runtime): remove this fallback once nader.compiler.network is always present.
        print(f"note: build_network unavailable ({exc}); the runtime side uses the hand-written network",
              file=sys.stderr)
        return NB201ResNet(width), "hand-written (compiler unavailable)"
    model, info = build_network(RESNET_NAD, "nb201", dataset, widths=[width, 2 * width, 4 * width])
    return model, f"block text via build_network ({info['params']:,} params, {info['flops'] / 1e6:.1f} MFLOPs)"


def load_images(n: int, data_dir):
    if data_dir:
        from nader.runtime.data import load_dataset

        b = load_dataset("cifar10", data_dir)
        return b.train.images[:n].numpy(), b.train.labels[:n].numpy(), f"CIFAR-10 ({data_dir})"
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8), rng.integers(0, 10, size=n).astype(np.int64),
            "synthetic uint8 32x32")


def bench(device: torch.device, args) -> dict:
    from nader.runtime.data import DatasetBundle, Split
    from nader.runtime.presets import get_preset
    from nader.runtime.trainer import Trainer, _amp_dtype

    images, labels, source = load_images(args.images, args.data_dir)
    epochs = args.rounds + 1
    torch.manual_seed(0)
    model, label = runtime_network(args.width)
    torch.manual_seed(0)
    hand = NB201ResNet(args.width)
    n_params = (sum(p.numel() for p in model.parameters()), sum(p.numel() for p in hand.parameters()))

    amp = _amp_dtype(device, "auto")
    cl = device.type == "cuda"
    workers = args.loader_workers if args.loader_workers is not None else (min(8, os.cpu_count() or 1)
                                                                          if device.type == "cuda" else 0)
    baseline = Baseline(hand, images, labels, device, args.batch, epochs, workers, amp, cl)

    tiny = Split(torch.from_numpy(images[:2].copy()), torch.from_numpy(labels[:2].copy()))
    data = DatasetBundle("bench", 10, 32, 4, True, CIFAR_MEAN, CIFAR_STD,
                         train=Split(torch.from_numpy(images), torch.from_numpy(labels)), valid=tiny, test=tiny)
    preset = get_preset("nb201").replace(epochs=epochs, batch_size=args.batch, eval_every=0, chance_epochs=None,
                                         compile=args.compile)

    # Interleave per step: after each runtime step (the time since the previous one covers the
    # runtime's batch preparation and its step) the baseline loads and trains one batch.
    pairs = []  # (epoch, runtime images, runtime seconds, baseline images, baseline seconds)
    state = {"mark": None}

    def step_hook(epoch, i, bs):
        sync(device)
        now = time.perf_counter()
        ours = (bs, now - state["mark"]) if state["mark"] is not None else None
        t0 = time.perf_counter()
        n = baseline.step()
        sync(device)
        if ours is not None and epoch >= 2:  # epoch 1 is warm-up for both sides
            pairs.append((epoch, ours[0], ours[1], n, time.perf_counter() - t0))
        state["mark"] = time.perf_counter()

    def on_event(ev):
        state["mark"] = None  # the first step of an epoch would include epoch-end work: not timed
        if ev["type"] == "epoch" and ev["epoch"] >= 2:
            mine = [p for p in pairs if p[0] == ev["epoch"]]
            print(f"  [{device.type}] epoch {ev['epoch']}/{epochs}: runtime "
                  f"{sum(p[1] for p in mine) / sum(p[2] for p in mine):.0f} img/s, baseline "
                  f"{sum(p[3] for p in mine) / sum(p[4] for p in mine):.0f} img/s", file=sys.stderr, flush=True)

    trainer = Trainer(model, data, preset, seed=0, device=device, callbacks=[on_event], step_hook=step_hook)
    trainer.fit()
    r = sum(p[1] for p in pairs) / sum(p[2] for p in pairs)
    b = sum(p[3] for p in pairs) / sum(p[4] for p in pairs)
    # the ratio is the median over adjacent step pairs: robust to load changing during the run
    ratio = statistics.median((p[1] / p[2]) / (p[3] / p[4]) for p in pairs)
    return {"device": device.type, "runtime_img_s": r, "baseline_img_s": b, "ratio": ratio, "ratio_of_totals": r / b,
            "steps_timed": len(pairs), "runtime_network": label, "params": n_params,
            "images": len(images), "batch": args.batch, "width": args.width, "loader_workers": workers,
            "amp": str(amp).replace("torch.", "") if amp else None, "channels_last": cl, "runtime_channels_last": preset.channels_last, "compile": args.compile,
            "threads": torch.get_num_threads(), "data": source}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=("auto", "cpu", "cuda", "all"), default="auto",
                    help="auto: CPU, plus CUDA when present")
    ap.add_argument("--images", type=int, default=None, help="images per epoch (default 1536 CPU, 25600 CUDA)")
    ap.add_argument("--rounds", type=int, default=3, help="timed epochs per side (after one warm-up epoch)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=16, help="C: stage widths C, 2C, 4C")
    ap.add_argument("--loader-workers", type=int, default=None,
                    help="baseline DataLoader workers (default 0 on CPU: fastest on few cores; 8 on CUDA)")
    ap.add_argument("--modes", default="eager,compile",
                    help="comma-separated runtime modes to measure: eager, compile (torch.compile the runtime's "
                         "network; the baseline stays eager)")
    ap.add_argument("--compile", action="store_true", help="same as --modes compile")
    ap.add_argument("--data-dir", default=None, help="use CIFAR-10 from this folder instead of synthetic images")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--trials-per-gpu", type=int, default=None,
                    help="K for the trials-per-GPU-hour figures [default: what the pool executor chooses]")
    ap.add_argument("--trial-epochs", type=int, default=3,
                    help="epochs measured per trial for the trials-per-GPU-hour projection (first is warm-up)")
    ap.add_argument("--no-trials", action="store_true", help="skip the trials-per-GPU-hour figures")
    ap.add_argument("--trial-compile", action="store_true", help="torch.compile each trial's network")
    args, _unknown = ap.parse_known_args(argv)  # run_all.py may pass options meant for other benchmarks

    devices = []
    if args.device in ("auto", "all", "cpu"):
        devices.append(torch.device("cpu"))
    if args.device in ("auto", "all", "cuda"):
        if torch.cuda.is_available():
            devices.append(torch.device("cuda"))
        elif args.device == "cuda":
            print("CUDA is not available", file=sys.stderr)
            return 2
    modes = ["compile"] if args.compile else [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"eager", "compile"}:
        print("--modes takes eager and/or compile", file=sys.stderr)
        return 2
    results = []
    for dev, mode in [(d, m) for d in devices for m in modes]:
        a = argparse.Namespace(**vars(args))
        a.compile = mode == "compile"
        if a.images is None:
            a.images = 25600 if dev.type == "cuda" else 1536
        try:
            res = bench(dev, a)
        except Exception as exc:  # e.g. torch.compile without a working C++ compiler
            print(f"train [{dev.type}, {mode}]: could not run: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        results.append(res)
        if not args.json:
            verdict = "met" if res["ratio"] >= 1.0 else "NOT met"
            print(f"train [{res['device']}, {'compile' if res['compile'] else 'eager'}]: runtime {res['runtime_img_s']:.0f} img/s, "
                  f"DataLoader baseline {res['baseline_img_s']:.0f} img/s, ratio {res['ratio']:.2f} "
                  f"(target >= 1.0 {verdict})")
            print(f"    runtime network: {res['runtime_network']}; hand-written {res['params'][1]:,} params; "
                  f"{res['images']} {res['data']} images/epoch, batch {res['batch']}, {res['steps_timed']} paired steps "
                  f"over {args.rounds} epochs (ratio of totals {res['ratio_of_totals']:.2f}); "
                  f"{res['threads']} threads, loader workers {res['loader_workers']}, amp {res['amp']}, "
                  f"baseline channels_last {res['channels_last']}, runtime channels_last {res['runtime_channels_last']} "
                  f"(auto: on for CPU and CUDA), compile {res['compile']}")
    if not args.no_trials and args.device != "cpu":
        trials = trial_figures(args)
        if trials is not None:
            results.append(trials)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    return 0


def trial_figures(args):
    """Trials per GPU-hour (K = 1 and the chosen K) and the 200-epoch projection, on CUDA only."""
    if not torch.cuda.is_available():
        print("trials [cuda]: no CUDA device; trials per GPU-hour and the 200-epoch projection not measured")
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_trials import trials_report

    try:
        rep = trials_report("cuda:0", RESNET_NAD, args.data_dir, epochs=max(2, args.trial_epochs),
                            k=args.trials_per_gpu, compile_=args.trial_compile)
    except Exception as exc:
        print(f"trials [cuda]: could not run: {type(exc).__name__}: {str(exc)[:300]}")
        return None
    if not args.json:
        print(f"trials [cuda, nb201-12, cifar10-valid]: K=1 {rep['trials_per_hour_k1']:.0f} trials/GPU-hour "
              f"({rep['trial_12_s_k1']:.0f} s a trial); K={rep['k']} ({rep['k_source']}) "
              f"{rep['trials_per_hour_k']:.0f} trials/GPU-hour ({rep['trial_12_s_k']:.0f} s a trial); "
              f"200-epoch protocol, one network: {rep['protocol_200_s'] / 60:.1f} min projected "
              f"(target <= 5 min; NB201's records 30-84 min)")
        print(f"    projected from {rep['measured_epochs']} measured epochs per trial (the first is warm-up); "
              f"steady epoch at K=1 {rep['steady_epoch_s_k1']:.2f} s; trial memory peak "
              f"{(rep['peak_bytes'] or 0) / 2**30:.2f} GiB reserved")
    return {"trials": rep}


if __name__ == "__main__":
    sys.exit(main())
