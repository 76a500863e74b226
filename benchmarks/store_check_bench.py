"""What the full integrity check costs a command that opens a run store (a writer before its first
write; a reader, which reports an index that disagrees with its table), against the quick check,
and what the cell checks cost a reader.

A synthetic run database (the search's schema, ``--archs`` architectures with their seeds,
results and epochs, cells of the sizes a real search writes) is built in a temporary folder;
then ``PRAGMA quick_check`` and ``PRAGMA integrity_check`` (runtime/integrity.check_database) are
timed, best of ``--repeat``, and one full read of the tree (search/records.records, every JSON
cell through the depth bound) with one cell nested 3,000 deep.

    python benchmarks/store_check_bench.py [--archs 10000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from nader.runtime.integrity import check_database
from nader.runtime.jobs import Result
from nader.search import records
from nader.search.store import RunReader, SearchStore

REPO = Path(__file__).resolve().parents[1]
TEXT = (REPO / "examples" / "resnet_basic.nad").read_text(encoding="utf-8")


def build(run: Path, archs: int) -> Path:
    rng = random.Random(0)
    store = SearchStore(run)
    rows = [{"arch_id": i, "parent_id": None if i == 0 else rng.randrange(i), "depth": 1, "status": "ok",
             "text": TEXT, "hash": f"{rng.getrandbits(128):032x}", "origin": "mutation", "operator": "swap",
             "change": {"op": "swap", "node": rng.randrange(10)}, "widths": [16, 32, 64], "params": 10_000 + i,
             "flops": 10 ** 6 + i, "valid_acc": rng.uniform(50, 95)} for i in range(archs)]
    store.insert(rows)
    for i in range(archs):
        result = Result(job_id=f"job{i}", status="ok", seed=0, valid_acc=rows[i]["valid_acc"], test_acc=80.0,
                        epochs=2, history=[{"epoch": e, "train_loss": 1.0 / (e + 1)} for e in range(1, 3)])
        store.record_seed(i, 0, status="ok", valid_acc=rows[i]["valid_acc"], test_acc=80.0, seconds=1.0, epochs=2,
                          job_id=f"job{i}", result=result)
    store.close()
    conn = sqlite3.connect(run / "runs.sqlite")
    conn.execute("UPDATE archs SET change=? WHERE arch_id=1", ("[" * 3000 + "]" * 3000,))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return run / "runs.sqlite"


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archs", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nader-store-bench-") as tmp:
        db = build(Path(tmp) / "run", args.archs)
        size = db.stat().st_size / 1e6
        quick = best_of(args.repeat, lambda: check_database(db))
        full = best_of(args.repeat, lambda: check_database(db, full=True))

        reader = RunReader(db.parent, full_check=False)
        reading = best_of(args.repeat, lambda: records.records(reader, problems=[]))
        warned: list = []
        records.records(reader, problems=warned)
        reader.close()
    print(f"store_check: {args.archs} archs, {size:.1f} MB: quick_check {quick * 1000:.0f} ms, integrity_check "
          f"{full * 1000:.0f} ms (once per command that opens the store); full read {reading * 1000:.0f} ms with "
          f"{len(warned)} warning(s) for the 3,000-deep cell")
    print(json.dumps({"archs": args.archs, "mb": round(size, 1), "quick_ms": round(quick * 1000),
                      "integrity_ms": round(full * 1000), "read_ms": round(reading * 1000), "warnings": len(warned)}))


if __name__ == "__main__":
    main()
