"""Parse throughput of the front end: unseen blocks in a fresh process, and the NADER corpus.

Prints ONE line, e.g.
    parse: 2345 blocks/s unseen (fresh process, 600 generated texts: sound 2100, random 2500,
    mutated 2400; 2400 per CPU-second); corpus 160 blocks: cold 5432 blocks/s, steady 23456
    blocks/s (repeated input) - target 2000 unseen met

* unseen: blocks generated and mutated by the test strategies (`tests/strategies.py`:
  `sound_blocks`, random `programs` with named ids, `mutated` texts), each parsed once by a
  fresh process that has only imported the front end and built the Lark parser; no text
  repeats, and lines repeat only as they do between real blocks (`0:input`, `0->2`). This is
  the figure users feel (wall clock); the figure per CPU-second of the process beside it is
  steadier on a shared machine.
* corpus (needs `$NADER_SHARED/nader-compat` or `../shared/nader-compat`; left out when
  absent): every `blocks/*.txt` file and every block text of `fail2success_log.json`. cold:
  the per-line intern cache cleared before each round; steady: the cache warm, i.e. the same
  input repeated (what an agent loop re-checking similar blocks sees, not a fresh input).

Each corpus figure is the best of `--rounds` rounds of at least `--min-time` seconds. Never
fails on speed: the target is reported, not asserted.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ROOT, corpus, shared_dir  # noqa: E402

TARGET = 2_000  # blocks/s, unseen, API

_CHILD = """
import json, sys, time
from nader.dsl.parser import grammar_parser, parse
grammar_parser()  # imports and builds the Lark parser, which broken lines need: start-up, not per block
texts = json.load(open(sys.argv[1]))
figures = {}
for kind, items in texts.items():
    start, cpu = time.perf_counter(), time.process_time()
    blocks = sum(len(parse(text, f"{kind}{i}.nad").program.blocks) for i, text in enumerate(items))
    figures[kind] = (blocks, time.perf_counter() - start, time.process_time() - cpu)
print(json.dumps(figures))
"""


def unseen_texts(count: int, seed: int) -> dict[str, list[str]]:
    """`count` distinct texts of each kind, drawn deterministically from the test strategies."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings
    from strategies import program_texts, sound_blocks
    from text_strategies import mutated

    from nader.dsl.format import format_block

    kinds = {"sound": sound_blocks(max_steps=10).map(format_block),
             "random": program_texts(max_blocks=1),
             "mutated": program_texts(max_blocks=1).flatmap(mutated)}
    texts: dict[str, list[str]] = {}
    for kind, strategy in kinds.items():
        found: dict[str, None] = {}

        @hypothesis_seed(seed)
        @settings(max_examples=count * 2, database=None, phases=[Phase.generate], deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def draw(text):
            if len(found) < count:
                found[text] = None

        draw()
        texts[kind] = list(found)
    return texts


def unseen_figures(texts: dict[str, list[str]]) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
    done = subprocess.run([sys.executable, "-c", _CHILD, f.name], capture_output=True, text=True, check=True)
    Path(f.name).unlink()
    figures = json.loads(done.stdout)
    blocks = sum(b for b, _, _ in figures.values())
    return {kind: b / seconds for kind, (b, seconds, _) in figures.items()} | {
        "all": blocks / sum(s for _, s, _ in figures.values()),
        "cpu": blocks / sum(c for _, _, c in figures.values())}


def corpus_figures(rounds: int, min_time: float):
    shared = shared_dir()
    if shared is None:
        return None
    from nader.dsl.parser import parse, parse_line

    texts = [(name, text) for name, text, _ in corpus(shared / "nader-compat")]
    n_blocks = sum(len(parse(text, name).program.blocks) for name, text in texts)

    def one_round(cold: bool) -> float:
        reps, elapsed = 0, 0.0
        while elapsed < min_time or reps == 0:
            if cold:
                parse_line.cache_clear()
            start = time.perf_counter()
            for name, text in texts:
                parse(text, name)
            elapsed += time.perf_counter() - start
            reps += 1
        return n_blocks * reps / elapsed

    cold = max(one_round(True) for _ in range(rounds))
    steady = max(one_round(False) for _ in range(rounds))
    return n_blocks, cold, steady


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200, help="generated texts of each kind (sound, random, mutated)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per corpus round, at least")
    args = ap.parse_args(argv)

    texts = unseen_texts(args.count, args.seed)
    unseen = unseen_figures(texts)
    total = sum(len(t) for t in texts.values())
    line = (f"parse: {unseen['all']:.0f} blocks/s unseen (fresh process, {total} generated texts: "
            f"sound {unseen['sound']:.0f}, random {unseen['random']:.0f}, mutated {unseen['mutated']:.0f}; "
            f"{unseen['cpu']:.0f} per CPU-second)")
    figures = corpus_figures(args.rounds, args.min_time)
    if figures is None:
        line += "; corpus skipped (no shared/nader-compat; set NADER_SHARED)"
    else:
        n_blocks, cold, steady = figures
        line += f"; corpus {n_blocks} blocks: cold {cold:.0f} blocks/s, steady {steady:.0f} blocks/s (repeated input)"
    verdict = "met" if unseen["all"] >= TARGET else "NOT met"
    print(f"{line} - target {TARGET} unseen {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
