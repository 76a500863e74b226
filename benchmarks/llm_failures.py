"""Harvests the blocks a real LLM wrote that fail `nadc verify` into a repair corpus folder.

Issues 28 and 39 ask for corpora of failures nobody here designed, kept with where each block came
from. `benchmarks/real_llm.py` and `benchmarks/llm_families.py` record every call of their runs
(`runs.sqlite`, table `llm_calls`); this reads the Modifier's replies from such run folders and
writes, for each reply whose block fails verification, the block as the model wrote it (extracted
from the reply; for an edit reply, the block its edits that apply make of the parent).

A corpus is split once and for all into a part to tune repairs on and a part held out of tuning
(issue 39: "keep a part of each corpus out of the tests you tune against"), by the request the
reply answered: a block is held out when the first hex digit of the SHA-256 of its request (the
request's id, e.g. `resnet_basic/micro/01` or `se/convnext`) is below 8, so about half the
requests are held out. Replies to one request resemble each other (a repair round restates the
first reply), so a split by block would put near-copies on both sides. The folder:

    CORPUS/manifest.json           what the corpus is, the split's rule and its counts
    CORPUS/tuning/manifest.json    one entry per block of the part: provenance below
    CORPUS/tuning/*.nad
    CORPUS/held_out/manifest.json
    CORPUS/held_out/*.nad

Each entry names the file, the server (`source`), the model, the run and call, the prompt's
versioned name, the request (its id, the plan the Modifier was given, the parent block's name and
the SHA-256 of the request as sent), the time it was written, the raw reply and the error codes.
Replies with no block, or whose block is the parent's, are counted, not kept: there is nothing in
them to repair. Harvesting runs again replaces what those runs gave and keeps the other runs'
blocks, so a corpus grows run by run and the same runs always give the same files;
`benchmarks/repair.py` repairs each part.

    .venv/bin/python benchmarks/llm_failures.py ~/.cache/nader-real-llm/work-*/nad-* \\
        --source "Gemma 3 270M Q4_K_M on llama-cpp-python 0.3.36, 2 threads" \\
        --out benchmarks/data/repair_corpus_gemma
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
sys.path.insert(0, str(HERE))

from llm_families import requests as family_requests  # noqa: E402
from llm_records import parent_of  # noqa: E402
from nader.agents.bench import nad  # noqa: E402
from nader.compiler.passes.canonical import canonical_hash  # noqa: E402
from nader.compiler.passes.verify import verify_program  # noqa: E402
from nader.compiler.reply_checks import check_base_block  # noqa: E402
from nader.dsl.edits import apply_edits  # noqa: E402
from nader.dsl.parser import parse  # noqa: E402

FIRST_TURNS = ("modifier_implement.", "modifier_edits.", "modifier_repair.", "modifier_edits_repair.")
PARTS = ("tuning", "held_out")
HELD_OUT_BELOW = 8  # of 16 first hex digits: about half the requests
SPLIT_RULE = ("a block is held out when the first hex digit of the SHA-256 of its request's id (UTF-8) is below "
              f"{HELD_OUT_BELOW:x}, else it is for tuning; the request's id is the arch_id of its calls without "
              "bench-nad's setting prefix")


def request_key(arch_id: str) -> str:
    """The request's id: bench-nad records `SETTING:REQUEST`, llm_families.py `REQUEST`."""
    return (arch_id or "").split(":", 1)[-1]


def split_of(key: str) -> str:
    return "held_out" if int(hashlib.sha256(key.encode()).hexdigest()[0], 16) < HELD_OUT_BELOW else "tuning"


def plans() -> dict[str, str]:
    """Each known request's plan, by id: the NAD benchmark's and the block families'."""
    return {**{r.id: r.text for r in nad.load()}, **{r["id"]: r["text"] for r in family_requests()}}


def _errors(text: str) -> list[str]:
    result = parse(text)
    reports, file_level = verify_program(result, stem_stride=None)
    return sorted({d.code.code for d in [*result.diagnostics, *file_level, *(x for r in reports for x in r.diagnostics)]
                   if d.is_error})


def harvest(run: Path, source: str, known: dict[str, str]) -> tuple[list[tuple[str, dict]], dict]:
    """(block text, manifest entry) for each failing block of a run's Modifier replies, and counts."""
    conn = sqlite3.connect(f"file:{run / 'runs.sqlite'}?mode=ro", uri=True)
    rows = conn.execute("SELECT call_id, key, prompt, arch_id, model, request, reply, created FROM llm_calls "
                        "WHERE kind = 'chat' AND role = 'modifier' AND status != 'failed' AND source != 'cache' "
                        "ORDER BY call_id").fetchall()
    conn.close()
    out, counts = [], {"replies": 0, "valid": 0, "no block": 0, "the parent": 0, "failing": 0}
    for call_id, digest, prompt, arch_id, model, request, reply, created in rows:
        if not prompt.startswith(FIRST_TURNS):
            continue
        counts["replies"] += 1
        text = (json.loads(reply) if reply else {}).get("text") or ""
        parent = parent_of(json.loads(request))
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
        key = request_key(arch_id)
        out.append((block, {
            "code": codes[0], "codes": codes, "source": source, "model": model, "run": f"{run.parent.name}/{run.name}",
            "call_id": call_id, "prompt": prompt, "request": arch_id, "plan": known.get(key),
            "parent": parse(parent).program.blocks[0].name, "request_sha256": digest,
            "written": datetime.datetime.fromtimestamp(created, datetime.timezone.utc).isoformat(timespec="seconds")
            if created else None, "reply": text}))
    return out, counts


def read_corpus(folder: Path) -> list[tuple[str, dict]]:
    """(block text, entry) of every block a split corpus folder holds."""
    out = []
    for part in PARTS:
        manifest = folder / part / "manifest.json"
        if manifest.is_file():
            for entry in json.loads(manifest.read_text(encoding="utf-8")):
                out.append(((folder / part / entry["file"]).read_text(encoding="utf-8"), entry))
    return out


def write_corpus(folder: Path, blocks: list[tuple[str, dict]], about: dict) -> dict:
    """Write the blocks into their parts (every .nad file of a part is replaced) and the manifests;
    the counts per part."""
    parts: dict = {part: [] for part in PARTS}
    for text, entry in blocks:
        file = f"{entry['code']}-{hashlib.sha256(text.encode()).hexdigest()[:10]}.nad"
        if any(e["file"] == file for p in parts.values() for e, _ in p):
            continue  # the same block written twice
        part = split_of(request_key(entry["request"]))
        parts[part].append(({"file": file, "split": part, **{k: v for k, v in entry.items()
                                                               if k not in ("file", "split")}}, text))
    for part, entries in parts.items():
        (folder / part).mkdir(parents=True, exist_ok=True)
        for old in (folder / part).glob("*.nad"):
            old.unlink()
        for entry, text in entries:
            (folder / part / entry["file"]).write_text(text, encoding="utf-8")
        (folder / part / "manifest.json").write_text(json.dumps([e for e, _ in entries], indent=1) + "\n",
                                                     encoding="utf-8")
    counts = {part: len(entries) for part, entries in parts.items()}
    top = {**about, "split": {"rule": SPLIT_RULE, "by": "request", **counts}}
    (folder / "manifest.json").write_text(json.dumps(top, indent=1) + "\n", encoding="utf-8")
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders holding runs.sqlite (bench-nad's --run-dir)")
    ap.add_argument("--out", type=Path, required=True, help="the corpus folder (its parts' blocks are rewritten)")
    ap.add_argument("--source", required=True, help="what served the model, for the manifest")
    ap.add_argument("--about", help="what the corpus is, for its manifest (kept when absent)")
    args = ap.parse_args(argv)
    old = json.loads((args.out / "manifest.json").read_text(encoding="utf-8")) \
        if (args.out / "manifest.json").is_file() else {}
    about = {k: v for k, v in old.items() if k != "split"}
    if args.about:
        about["corpus"] = args.about
    runs = sorted(r for r in args.runs if r.is_dir())
    names = {f"{r.parent.name}/{r.name}" for r in runs}
    blocks = [(t, e) for t, e in read_corpus(args.out) if e["run"] not in names]  # other runs' blocks stay
    known, total = plans(), {}
    for run in runs:
        if not (run / "runs.sqlite").is_file():
            print(f"{run}: no runs.sqlite, skipped")
            continue
        found, counts = harvest(run, args.source, known)
        total = {k: total.get(k, 0) + v for k, v in counts.items()}
        blocks += found
    counts = write_corpus(args.out, blocks, about)
    print(f"{sum(counts.values())} failing blocks in {args.out} ({', '.join(f'{k} {v}' for k, v in counts.items())});"
          f" replies read: " + ", ".join(f"{k} {v}" for k, v in total.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
