"""Where the benchmarks find NADER's compatibility corpus, and its block texts."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Optional[Path]:
    """`$NADER_SHARED`, else `../shared` beside the repository, when it holds `nader-compat/`."""
    env = os.environ.get("NADER_SHARED")
    candidates = [Path(env)] if env else [ROOT.parent / "shared"]
    for c in candidates:
        if (c / "nader-compat").is_dir():
            return c
    return None


def stem_stride(name: str) -> int:
    """The stem stride of a corpus file: 4 for ImageNet-style stems, else 1."""
    return 4 if (name.startswith("blocks__") or "forRes50" in name) else 1


def corpus(compat: Path) -> list[tuple[str, str, int]]:
    """(name, text, stem stride) for every block file and every logged block text (stride 4)."""
    texts = [(p.name, p.read_text(encoding="utf-8"), stem_stride(p.name))
             for p in sorted((compat / "blocks").glob("*.txt"))]
    log = compat / "fail2success_log.json"
    if log.is_file():
        data = json.loads(log.read_text(encoding="utf-8"))
        for kind, runs in sorted((data or {}).items()):
            for run, entries in sorted((runs or {}).items()):
                for i, entry in enumerate(entries or []):
                    for side in ("fail_block", "success_block"):
                        for key, text in sorted(((entry or {}).get(side) or {}).items()):
                            if text:
                                texts.append((f"{kind}/{run}/{i}/{side}/{key}", text, 4))
    return texts
