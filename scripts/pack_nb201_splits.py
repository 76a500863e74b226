"""Derive runtime/nb201_splits.json from NAS-Bench-201's published split files.

    python scripts/pack_nb201_splits.py ../shared/nader-compat/splits [-o runtime/nb201_splits.json]

The input folder holds cifar-split.txt, cifar100-test-split.txt and
imagenet-16-120-test-split.txt as NAS-Bench-201 publishes them. Each is read as JSON
(never evaluated) and packed as a bitset by nader.runtime.splits.pack, which refuses lists
that are not a sorted partition. tests/runtime/test_runtime_splits.py re-runs this script and
compares its output with the committed file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FILES = {
    "cifar-split.txt": ("train", "valid"),
    "cifar100-test-split.txt": ("xvalid", "xtest"),
    "imagenet-16-120-test-split.txt": ("xvalid", "xtest"),
}
ABOUT = ("NAS-Bench-201's published split index lists (Dong & Yang, ICLR 2020), packed by "
         "scripts/pack_nb201_splits.py; format described in the module nader.runtime.splits")


def build(folder: Path) -> str:
    from nader.runtime.splits import FORMAT, pack

    files = {}
    for name, keys in FILES.items():
        raw = (folder / name).read_bytes()
        data = json.loads(raw)
        parts = {}
        for key in keys:
            tag, values = data[key]
            if tag != "int":
                raise ValueError(f"{name}: {key!r} is tagged {tag!r}, expected 'int'")
            parts[key] = [int(v) for v in values]
        files[name] = pack(parts, raw)
    return json.dumps({"format": FORMAT, "about": ABOUT, "files": files}, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="folder with the three published split files")
    ap.add_argument("-o", "--output", type=Path,
                    default=Path(__file__).resolve().parent.parent / "runtime" / "nb201_splits.json")
    args = ap.parse_args(argv)
    try:
        text = build(args.folder)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
