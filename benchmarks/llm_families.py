"""Blocks of every family a real LLM writes through the project's own Modifier: a corpus of failures
nobody here designed (issue 39). Not in the suite.

    python benchmarks/llm_families.py [--cache DIR] [--wordings 1] [--replies edits] [--threads 2]
    python benchmarks/llm_families.py --base-url http://HOST:PORT/v1 --model NAME
    python benchmarks/llm_families.py --summarize WORK_FOLDER

The requests (`benchmarks/data/family_requests.toml`) ask for a squeeze-and-excitation gate,
attention, several branches, dense connections or an inverted bottleneck, each of every parent of
the NAD benchmark (its five base blocks), NAD-style: the request is the Modifier's plan; so are
FairNAD's refinement plans (its stage II: scale up, tune; `fairnad_plan.v1`), to see what a small
model makes of FairNAD's wording. Each goes
to the Modifier (`nader.agents.modifier`) through the one LLM client, recorded in a run folder
(`runs.sqlite`, `llm_calls`), as `nader-search` sends it: the prompt the model's profile asks for
(`modifier_edits.v2` with the parent's edit grammar where `llm check` recommends edits and a
grammar field, as for Gemma 3 270M), with `--rounds` replies at most (1: the first replies alone).
Without `--base-url` it serves Gemma 3 270M on llama.cpp's server as `benchmarks/real_llm.py`
does (the same cache and build), and asks `nader-search llm check --write` for the profile.

It prints, per reply form and family, E of the first replies as written and after the compiler's
repair (`benchmarks/llm_records.py`). The failing blocks become a corpus with
`benchmarks/llm_failures.py WORK/families-* --out benchmarks/data/repair_corpus_gemma_families`.
A run folder answers the calls it already made from its record, so a run cut short goes on
where it stopped.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from llm_records import first_replies  # noqa: E402
from real_llm import ALIAS, DEFAULT_CACHE, nader_search, profile_variant, served, step  # noqa: E402

REQUESTS = HERE / "data" / "family_requests.toml"


#: FairNAD's stage II plans (`fairnad_plan.v1`: scale up, tune), its wordings in order, as families
FAIRNAD_STAGES = {"fairnad-upscale": "upscale", "fairnad-tune": "tune"}
FAIRNAD_WORDINGS = 4


def fairnad_families() -> list[dict]:
    """FairNAD's refinement plans as the Modifier gets them (`nader.agents.fairnad.render_plan`)."""
    from nader.agents.fairnad import render_plan

    return [{"name": name, "texts": [render_plan(stage=stage, pick=(i + 0.5) / FAIRNAD_WORDINGS)
                                     for i in range(FAIRNAD_WORDINGS)]} for name, stage in FAIRNAD_STAGES.items()]


def requests(wordings: int | None = None) -> list[dict]:
    """Every request: id FAMILY/PARENT/N, family, parent, plan text; the first `wordings` of each
    family, FairNAD's refinements after the block families."""
    spec = tomllib.loads(REQUESTS.read_text(encoding="utf-8"))
    out = []
    for family in [*spec["family"], *fairnad_families()]:
        for n, text in enumerate(family["texts"][:wordings], 1):
            for parent in spec["parents"]:
                out.append({"id": f"{family['name']}/{parent}/{n}", "family": family["name"], "parent": parent,
                            "text": text})
    return out


def ask(config: Path, base_url: str, model: str, run: Path, todo: list[dict], rounds: int,
        timeout: float | None = None) -> None:
    """The Modifier on each request, its calls recorded in `run` (answered from there when made before)."""
    from nader.agents.bench.nad import base_blocks
    from nader.agents.llm import LLMClient, load_config
    from nader.agents.modifier import Modifier

    bases = base_blocks()
    overrides = {"base_url": base_url, "model": model, "request_timeout": timeout}
    client = LLMClient.from_config(load_config(config, overrides), store=run)
    try:
        modifier = Modifier(client, rounds=rounds)
        for i, request in enumerate(todo, 1):
            started = time.monotonic()
            m = modifier.write_block(bases[request["parent"]], request["text"], arch_id=request["id"])
            print(f"   {i}/{len(todo)} {request['id']}: {'verifies' if m.ok else (m.error or '')[:90]}"
                  f" ({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        client.close()


def summarize(work: Path) -> None:
    """E per reply form and family, from the run folders' records."""
    print("\n| reply form | family | first replies | E as written | E with repair |\n|---|---|---|---|---|")
    for run in sorted(p for p in work.glob("families-*") if p.is_dir()):
        entries = first_replies(run)
        for family in sorted({e["request"].split("/")[0] for e in entries}) + ["all"]:
            some = [e for e in entries if family == "all" or e["request"].startswith(family + "/")]
            print(f"| {run.name.removeprefix('families-')} | {family} | {len(some)} |"
                  f" {sum(e['ok'] for e in some)}/{len(some)} | {sum(e['repaired'] for e in some)}/{len(some)} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="build cache and work folders")
    ap.add_argument("--base-url", help="ask this endpoint instead of serving Gemma 3 270M")
    ap.add_argument("--model", default=ALIAS, help="model name at the endpoint")
    ap.add_argument("--replies", default="edits", help="reply forms: edits (with the grammar), block, or both")
    ap.add_argument("--grammar-field", choices=("llama.cpp", "vllm"), default="llama.cpp")
    ap.add_argument("--wordings", type=int, default=1, help="each family's first N wordings")
    ap.add_argument("--rounds", type=int, default=1, help="the Modifier's replies per request at most")
    ap.add_argument("--timeout", type=float, help="seconds per HTTP attempt ([llm] request_timeout)")
    ap.add_argument("--max-tokens", type=int, help="the profile's max_tokens, whatever `llm check` measured")
    ap.add_argument("--threads", type=int, default=2, help="the built server's threads")
    ap.add_argument("--context", type=int, default=8192, help="the built server's context length")
    ap.add_argument("--work", type=Path, help="the work folder (a finished or cut one goes on)")
    ap.add_argument("--summarize", type=Path, metavar="WORK_FOLDER", help="print E from a work folder; call nothing")
    args = ap.parse_args(argv)
    if args.summarize is not None:
        summarize(args.summarize)
        return 0
    work = args.work or args.cache / time.strftime("families-%Y%m%d-%H%M%S")
    work.mkdir(parents=True, exist_ok=True)
    with served(args, work) as base_url:
        config = work / "nader.toml"
        if not config.exists():
            step("llm check", [*nader_search(), "llm", "check", "--llm-base-url", base_url, "--llm-model", args.model,
                               "--format", "json", "--write", str(config)], work / "check.log")
            if args.base_url is None:  # llama-cpp-python's server does not say its n_ctx
                profile_variant(config, config.name, context=args.context)
        if args.max_tokens:
            profile_variant(config, config.name, max_tokens=args.max_tokens)
        todo = requests(args.wordings)
        for form in [f.strip() for f in args.replies.split(",") if f.strip()]:
            grammar = args.grammar_field if form == "edits" else "none"
            cfg = profile_variant(config, f"nader-{form}.toml", reply=form, grammar=grammar)
            run = work / f"families-{form}-{re.sub(r'[^a-z0-9]+', '-', grammar)}"
            print(f"\n== {len(todo)} requests, reply form {form}, grammar {grammar}: {run}", flush=True)
            ask(cfg, base_url, args.model, run, todo, args.rounds, args.timeout)
    summarize(work)
    print(f"\nwork folder: {work}; load average {os.getloadavg()}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
