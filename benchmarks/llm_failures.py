"""Harvests the blocks a real LLM wrote that fail `nadc verify` into a repair corpus folder.

Issue 28 asks for a corpus of realistic failures, the errors Gemma 3 270M makes on llama.cpp's
server among them, kept with where each block came from. `benchmarks/real_llm.py` records every
call of its runs (`runs.sqlite`, table `llm_calls`); this reads the Modifier's replies from such
run folders and writes, for each reply whose block fails verification, the block as the model
wrote it (extracted from the reply; for an edit reply, the block its edits that apply make of
the parent) to `--out`, with `manifest.json` naming the model, the run, the call, the prompt
version, the request and the errors. Replies with no block, or whose block is the parent's, are
counted, not kept: there is nothing in them to repair. Running it again over the same runs
writes the same files; `benchmarks/repair.py` repairs the folder.

    .venv/bin/python benchmarks/llm_failures.py ~/.cache/nader-real-llm/work-*/nad-* \\
        --source "Gemma 3 270M Q4_K_M on llama-cpp-python 0.3.36" --out benchmarks/data/repair_corpus_gemma
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from nader.compiler.reply_checks import check_base_block  # noqa: E402
from nader.dsl.edits import apply_edits  # noqa: E402
from nader.dsl.parser import parse  # noqa: E402
from nader.compiler.passes.canonical import canonical_hash  # noqa: E402
from nader.compiler.passes.verify import verify_program  # noqa: E402

FIRST_TURNS = ("modifier_implement.", "modifier_edits.", "modifier_repair.", "modifier_edits_repair.")


def _parent(request: dict) -> str:
    """The block the Modifier was asked to change: the first fenced block of the first user turn."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return user.split("```\n", 1)[1].split("\n```", 1)[0] + "\n"


def _errors(text: str) -> list[str]:
    result = parse(text)
    reports, file_level = verify_program(result, stem_stride=None)
    return sorted({d.code.code for d in [*result.diagnostics, *file_level, *(x for r in reports for x in r.diagnostics)]
                   if d.is_error})


def harvest(run: Path) -> tuple[list[tuple[str, dict]], dict]:
    """(block text, manifest entry) for each failing block of a run's Modifier replies, and counts."""
    conn = sqlite3.connect(f"file:{run / 'runs.sqlite'}?mode=ro", uri=True)
    rows = conn.execute("SELECT call_id, prompt, arch_id, model, request, reply, created FROM llm_calls "
                        "WHERE kind = 'chat' AND role = 'modifier' AND status != 'failed' ORDER BY call_id").fetchall()
    conn.close()
    out, counts = [], {"replies": 0, "valid": 0, "no block": 0, "the parent": 0, "failing": 0}
    for call_id, prompt, arch_id, model, request, reply, created in rows:
        if not prompt.startswith(FIRST_TURNS):
            continue
        counts["replies"] += 1
        text = (json.loads(reply) if reply else {}).get("text") or ""
        parent = _parent(json.loads(request))
        if prompt.startswith("modifier_edits"):
            block = apply_edits(parent, text, skip=True).text
        else:
            block = check_base_block(text).text
        if not block:
            counts["no block"] += 1
            continue
        codes = _errors(block)
        if not codes:
            same = canonical_hash(parse(block).program.blocks[0]) == canonical_hash(parse(parent).program.blocks[0])
            counts["the parent" if same else "valid"] += 1
            continue
        counts["failing"] += 1
        out.append((block, {"code": codes[0], "codes": codes, "model": model, "run": f"{run.parent.name}/{run.name}",
                            "call_id": call_id, "prompt": prompt, "request": arch_id,
                            "written": datetime.datetime.fromtimestamp(created, datetime.timezone.utc).isoformat(
                                timespec="seconds") if created else None}))
    return out, counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders holding runs.sqlite (bench-nad's --run-dir)")
    ap.add_argument("--out", type=Path, required=True, help="the corpus folder to write (its .nad files are replaced)")
    ap.add_argument("--source", required=True, help="what served the model, for the manifest")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.nad"):
        old.unlink()
    manifest, total = [], {}
    for run in sorted(r for r in args.runs if r.is_dir()):
        if not (run / "runs.sqlite").is_file():
            print(f"{run}: no runs.sqlite, skipped")
            continue
        blocks, counts = harvest(run)
        total = {k: total.get(k, 0) + v for k, v in counts.items()}
        for text, entry in blocks:
            digest = hashlib.sha256(text.encode()).hexdigest()[:10]
            file = f"{entry['code']}-{digest}.nad"
            if any(m["file"] == file for m in manifest):
                continue  # the same block written twice
            (args.out / file).write_text(text, encoding="utf-8")
            manifest.append({"file": file, "source": args.source, **entry})
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"{len(manifest)} failing blocks written to {args.out}; replies: "
          + ", ".join(f"{k} {v}" for k, v in total.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
