"""Generated derived tables (`--evaluator table:FILE`) over NAS-Bench-201's cell space.

`smooth_accuracy` is additive over the six edges, with one best operation per edge, so its
optimum is known (`OPTIMUM`) and a one-edge hill climb reaches it from anywhere; the best
operations are all convolutions, so no other string denotes the optimum's graph. `write`
writes it as CSV (an ``arch`` column) or JSON (``{arch: {metric: value}}``), optionally with
holes: cells left out, and cells whose numbers are missing (empty in CSV, null in JSON).
"""
from __future__ import annotations

import csv
import json

from nader.search.spaces import nb201 as S

BEST = ("nor_conv_3x3", "nor_conv_1x1", "nor_conv_3x3", "nor_conv_1x1", "nor_conv_3x3", "nor_conv_3x3")
OPTIMUM = S.CellStructure(BEST)
EPOCH_SECONDS = 10.0


def smooth_accuracy(cell) -> float:
    """60 plus, per edge, 5 for its best operation and less for the others (distinct values, no ties)."""
    cell = S.as_cell(cell)
    total = 60.0
    for edge, op in enumerate(cell.ops):
        if op == BEST[edge]:
            total += 5.0
        else:
            total += S.OPS.index(op) * 0.7 + edge * 0.05
    return round(total, 4)


def row(cell) -> dict:
    acc = smooth_accuracy(cell)
    return {"valid_acc@12": acc, "test_acc@12": round(acc - 1, 4), "test_acc@200": round(acc + 20, 4),
            "epoch_seconds": EPOCH_SECONDS + S.as_cell(cell).ops.count("nor_conv_3x3"), "params": 1000}


def write(path, layout: str = "csv", cells=None, absent=(), blank=(), columns=None):
    """A derived table of `cells` (default: all 15,625) without the `absent` cells and with no
    numbers in `blank` cells' `columns` (default: every column)."""
    absent = {str(S.as_cell(c)) for c in absent}
    blank = {str(S.as_cell(c)) for c in blank}
    data = {}
    for cell in (cells if cells is not None else S.all_cells()):
        key = str(S.as_cell(cell))
        if key in absent:
            continue
        values = row(cell)
        if key in blank:
            values = {k: (None if columns is None or k in columns else v) for k, v in values.items()}
        data[key] = values
    if layout == "json":
        path.write_text(json.dumps(data), encoding="utf-8")
        return path
    names = list(row(S.ZERO))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["arch", *names])
        for key, values in data.items():
            w.writerow([key, *("" if values[n] is None else values[n] for n in names)])
    return path


def table_settings(run, table, **extra) -> dict:
    """A NAS-Bench-201 search of `table` (a derived table) under the benchmarks' 12-epoch signal."""
    return {"space": "nb201", "dataset": "cifar10", "evaluator": f"table:{table}", "preset": "nb201-12",
            "seeds": [777], "run_dir": str(run), **extra}
