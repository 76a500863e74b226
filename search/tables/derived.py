"""Derived tables (``--evaluator table:FILE.csv|FILE.json``): the tables researchers
keep beside the official benchmark files, read without any API package.

* **CSV**: a header row with an ``arch`` column (NAS-Bench-201 strings, ``|op~0|+|op~0|op~1|+...``)
  and metric columns.
* **JSON**: ``{arch: {column: value}}``, or ``{arch: {dataset: {column: value}}}``, whose inner
  keys are read as ``dataset:column``.

**Metrics** (what the search asks for) and the column that holds each by default:

| metric | default column | meaning |
|---|---|---|
| ``valid_acc@E`` | ``valid_acc@E`` | validation accuracy (percent) after E epochs, any E (12, 200, ...) |
| ``test_acc@E`` | ``test_acc@E`` | test accuracy (percent) after E epochs |
| ``epoch_seconds`` | ``epoch_seconds`` | training seconds per epoch (the simulated time is epochs x this) |
| ``params``, ``flops`` | ``params``, ``flops`` | counts (optional) |

A column ``DATASET:COLUMN`` (``cifar10-valid:valid_acc@12``) is that dataset's and wins over the
plain ``COLUMN``, which serves every dataset. ``--table-map metric=column,...`` names other
columns (``--table-map valid_acc@12=val_acc_12,test_acc@200=test_acc``). A derived table holds one
number per metric (usually a mean over trials): every seed reads the same one.

Loading checks the file against the space and keeps a summary (`FileTable.summary`): rows, cells
of the space covered, strings that are not cells, duplicates, and per metric the rows without a
number. A trial the table cannot answer raises TableError with its kind (``missing-entry``,
``missing-epoch``, ``missing-value``; see `base.TableError`), which the search records as
a failed trial and goes on.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, List, Optional

from nader.inputs import InputError, csv_rows, load_json, read_bounded_text
from nader.runtime.errors import ConfigError
from nader.search.spaces import nb201

from .base import ACCURACY, TableError, TableRecord, number

KIND = "table"
MAX_BYTES = 512 * 2**20  # a whole NB201 table with every epoch is far smaller
MAX_ROWS = 1_000_000
MAX_FIELD_CHARS = 131_072  # an arch string is under 100 characters, a number under 30
MAX_NUMBER_DIGITS = 100
MAX_DEPTH = 8  # {arch: {dataset: {column: value}}}
METRIC = re.compile(r"(valid_acc|test_acc)@([1-9][0-9]{0,3})|epoch_seconds|params|flops")
DATASETS = ("cifar10-valid", "cifar10", "cifar100", "imagenet16-120")  # the tables' dataset names
# Other spellings of a metric's column, read without --table-map when only one column of a table
# (per dataset) reads as that metric: GENIUS's `val_acc_200`, `test_acc_200`, NATS-Bench-style
# `cifar10-valid-valid-accuracy-12`, `ImageNet16-120/test_acc@200`.
_DATASET_PREFIX = re.compile(r"(cifar10-valid|cifar100|cifar10|imagenet16-120)[:/_.\- ]+(.+)", re.I)
_ALIAS = re.compile(r"(val|valid|validation|x-valid|test|x-test|ori-test)[_\- ]?(?:acc|accuracy|top1)"
                    r"(?:[_@\- ]?(?:epoch|ep|e)?[_\- ]?([1-9][0-9]{0,3}))", re.I)


def check_table_map(table_map: Optional[dict]) -> None:
    """Refuse a --table-map entry whose metric we do not know (the usage error names the known ones)."""
    for metric, column in (table_map or {}).items():
        if not METRIC.fullmatch(metric):
            raise ConfigError(f"table-map: unknown metric {metric!r}; metrics are valid_acc@E, test_acc@E (E epochs), "
                              f"epoch_seconds, params, flops")
        if not column:
            raise ConfigError(f"table-map: no column given for {metric}")


def _rows(path: Path) -> Dict[str, dict]:
    """arch string (as written) -> {column: value}; TableError when the file cannot be read or is
    refused (a special file, a symlink loop, past the size, not UTF-8, a field, number or nesting past
    the bounds of `nader.inputs`): one line naming the file."""
    try:
        text = read_bounded_text(path, "table", max_bytes=MAX_BYTES)
        if path.suffix.lower() == ".json":
            return _json_rows(path, text)
        return _csv_rows(path, text)
    except InputError as exc:
        raise TableError(f"table: {exc}") from None


def _json_rows(path: Path, text: str) -> Dict[str, dict]:
    data = load_json(text, str(path), max_depth=MAX_DEPTH, max_number_digits=MAX_NUMBER_DIGITS)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise TableError(f"table: {path}: expected {{arch: {{metric: value}}}} (an object of objects)")
    if len(data) > MAX_ROWS:
        raise TableError(f"table: {path} has {len(data):,} entries, over the {MAX_ROWS:,} limit")
    out = {}
    for arch, metrics in data.items():
        flat = {}
        for key, value in metrics.items():
            if isinstance(value, dict):  # {dataset: {column: value}}
                flat.update({f"{key}:{k}": v for k, v in value.items()})
            else:
                flat[key] = value
        out[str(arch)] = flat
    return out


def _csv_rows(path: Path, text: str) -> Dict[str, dict]:
    rows = csv_rows(text, str(path), max_field_chars=MAX_FIELD_CHARS, max_rows=MAX_ROWS)
    header = next(rows, None)
    names = [f.strip() for f in header or []]
    if "arch" not in names:
        raise TableError(f"table: {path}: a CSV table needs a header row with an `arch` column "
                             f"(got {', '.join(header or []) or 'no header'})")
    out = {}
    for fields in rows:
        if not fields:
            continue
        row = {name: (value.strip() or None) for name, value in zip(names, fields)}
        for name in names[len(fields):]:  # a short row: its missing fields are empty
            row[name] = None
        arch = row.pop("arch", "") or ""
        out.setdefault(arch, {}).update(row)
    return out


def recognised(columns) -> Dict[str, str]:
    """Metric (``DATASET:metric`` for a dataset's column) -> the column that holds it, for the
    columns not named as metrics but whose reading is unambiguous; two columns reading as one
    metric (for one dataset) leave it out, for --table-map to settle."""
    found: Dict[str, List[str]] = {}
    for column in columns:
        dataset, _, name = column.rpartition(":")
        if not dataset:
            m = _DATASET_PREFIX.fullmatch(name)
            if m:
                dataset, name = m.group(1).lower(), m.group(2)
        if dataset and dataset.lower() not in DATASETS:
            continue
        m = _ALIAS.fullmatch(name.strip())
        if not m or METRIC.fullmatch(name):
            if METRIC.fullmatch(name) and dataset and column != f"{dataset.lower()}:{name}":
                found.setdefault(f"{dataset.lower()}:{name}", []).append(column)
            continue
        kind = "valid_acc" if m.group(1).lower() in ("val", "valid", "validation", "x-valid") else "test_acc"
        metric = f"{kind}@{int(m.group(2))}"
        found.setdefault(f"{dataset.lower()}:{metric}" if dataset else metric, []).append(column)
    return {metric: cols[0] for metric, cols in found.items() if len(cols) == 1 and metric not in columns}


def _bounds(metric: str) -> tuple:
    """What a metric's values may be: accuracies are percentages; seconds and counts not negative."""
    return ACCURACY if metric.startswith(("valid_acc", "test_acc")) else (0, None)


def _usable(value, bounds: tuple) -> bool:
    try:
        number(value, "value", *bounds)
    except TableError:
        return False
    return True


class FileTable:
    """Answers trials from a derived table; same `evaluate` as `benchmark.BenchmarkTable`."""

    kind = KIND

    def __init__(self, path, table_map: Optional[dict] = None):
        self.path = Path(path).expanduser()
        if not os.path.lexists(self.path):
            raise TableError(f"table: no file at {self.path}")
        check = dict(table_map or {})
        self.table_map = check
        raw = _rows(self.path)
        self.rows: Dict[str, dict] = {}
        self.unknown: List[str] = []
        self.duplicates = 0
        for arch, row in raw.items():
            try:
                cell = str(nb201.CellStructure.parse(arch))
            except nb201.NotInSpace:
                self.unknown.append(arch)
                continue
            if cell in self.rows:
                self.duplicates += 1
            self.rows[cell] = row
        self.columns = sorted({c for row in self.rows.values() for c in row})
        self.aliases = recognised(self.columns)  # metric (or DATASET:metric) -> column

    def __repr__(self) -> str:
        return f"FileTable({self.path})"

    # ------------------------------------------------------------------ columns
    def column(self, metric: str, dataset: str) -> Optional[str]:
        """The column holding `metric` for `dataset` (None: the table has none)."""
        name = self.table_map.get(metric, metric)
        for candidate in (f"{dataset}:{name}", name):
            if candidate in self.columns:
                return candidate
        if metric in self.table_map:  # a mapped column is taken as named, never guessed
            return None
        for candidate in (f"{dataset}:{metric}", metric):
            if candidate in self.aliases:
                return self.aliases[candidate]
        return None

    def datasets(self) -> set:
        """The datasets the table's columns name (empty: its columns serve every dataset)."""
        return {c.partition(":")[0] for c in (*self.columns, *self.aliases) if ":" in c
                and c.partition(":")[0] in DATASETS}

    def _schedules(self, metric: str, dataset: str) -> set:
        names = {c.rpartition(":")[2] for c in (*self.columns, *self.aliases)} | set(self.table_map)
        out = set()
        for name in names:
            m = METRIC.fullmatch(name)
            if m and m.group(1) == metric and self.column(name, dataset) is not None:
                out.add(int(m.group(2)))
        return out

    def test_schedules(self, dataset: str) -> set:
        """Epoch budgets with a test accuracy column for `dataset` (test_acc@E, mapped or not)."""
        return self._schedules("test_acc", dataset)

    def valid_schedules(self, dataset: str) -> set:
        """Epoch budgets with a validation accuracy column for `dataset`: the budgets a search
        (each rung of a multi-fidelity one) can be answered at."""
        return self._schedules("valid_acc", dataset)

    def summary(self, dataset: Optional[str] = None) -> List[str]:
        """What loading found: counts first, then one line per problem."""
        lines = [f"table {self.path.name}: {len(self.rows):,} cells of the NAS-Bench-201 space "
                 f"({nb201.SPACE_SIZE - len(self.rows):,} of {nb201.SPACE_SIZE:,} absent), "
                 f"columns: {', '.join(self.columns) or 'none'}"]
        if self.aliases:
            lines.append(f"columns read as metrics: {self.recognised_text()}")
        if self.unknown:
            shown = ", ".join(repr(a[:60]) for a in self.unknown[:3])
            lines.append(f"warning: {len(self.unknown):,} rows name no NAS-Bench-201 cell (ignored), e.g. {shown}")
        if self.duplicates:
            lines.append(f"warning: {self.duplicates:,} cells appear more than once (the last row is used)")
        metrics = [m for m in self.table_map] + [c.rpartition(":")[2] for c in (*self.columns, *self.aliases)]
        wanted = sorted({m for m in metrics if METRIC.fullmatch(m)})
        if not any(m.startswith("valid_acc@") for m in wanted):
            lines.append("warning: no validation accuracy column (valid_acc@E, or --table-map valid_acc@E=COLUMN): "
                         "every trial will fail")
        if not any(m.startswith("test_acc@") for m in wanted):
            lines.append("warning: no test accuracy column (test_acc@E, or --table-map test_acc@E=COLUMN): the run "
                         "reports none")
        if dataset and not self.datasets() and dataset != "cifar10-valid":
            lines.append(f"warning: the columns name no dataset: their numbers are taken as {dataset}'s")
        for metric in wanted:
            column = self.column(metric, dataset or "")
            if column is None:
                lines.append(f"warning: --table-map names column {self.table_map.get(metric)!r} for {metric}, "
                             f"which the table lacks")
                continue
            holes = sum(1 for row in self.rows.values() if row.get(column) is None)
            if holes:
                lines.append(f"warning: {metric} ({column}): {holes:,} cells without a value (failed trials if drawn)")
            bounds = _bounds(metric)
            refused = sum(1 for row in self.rows.values() if row.get(column) is not None
                          and not _usable(row[column], bounds))
            if refused:
                what = "a finite accuracy in [0, 100]" if bounds == ACCURACY else "a finite number >= 0"
                lines.append(f"warning: {metric} ({column}): {refused:,} cells whose value is not {what} "
                             f"(failed trials if drawn)")
        return lines

    def recognised_text(self) -> str:
        """`metric <- column` for the columns read under another name ('' when none)."""
        return ", ".join(f"{m} <- {c}" for m, c in sorted(self.aliases.items()))

    # ------------------------------------------------------------------ answering
    def cell(self, arch: str) -> nb201.CellStructure:
        text = (arch or "").strip()
        try:
            return nb201.CellStructure.parse(text) if text.startswith("|") else nb201.cell_of_text(text)
        except nb201.NotInSpace as exc:
            raise TableError(f"table answers only NAS-Bench-201 cells: {exc}", "not-in-space") from None

    def value(self, row: dict, cell, metric: str, dataset: str) -> float:
        column = self.column(metric, dataset)
        if column is None:
            raise TableError(f"table {self.path.name} has no {metric} column for {dataset} "
                                 f"(--table-map {metric}=COLUMN names one)", "missing-epoch")
        if row.get(column) is None:
            raise TableError(f"table {self.path.name}: {cell} has no {metric} ({column})", "missing-value")
        return number(row[column], f"table {self.path.name}: {cell}'s {metric} ({column})", *_bounds(metric))

    def evaluate(self, arch: str, dataset: str, epochs: int, seed: Optional[int] = None,
                 test_epochs: Optional[int] = None) -> TableRecord:
        cell = self.cell(arch)
        row = self.rows.get(str(cell))
        if row is None:
            raise TableError(f"table {self.path.name} has no row for {cell}", "missing-entry")
        epochs = int(epochs)
        valid = self.value(row, cell, f"valid_acc@{epochs}", dataset)
        extra: dict = {}
        try:  # the reported figure: never a reason to fail the trial, whose signal is valid
            test = self.value(row, cell, f"test_acc@{int(test_epochs or epochs)}", dataset)
        except TableError as exc:
            test, extra["test_missing"] = None, str(exc)
        seconds = None
        per_epoch = self.column("epoch_seconds", dataset)
        if per_epoch is not None and row.get(per_epoch) is not None:
            seconds = epochs * self.value(row, cell, "epoch_seconds", dataset)
        counts = {}
        for name in ("params", "flops"):
            column = self.column(name, dataset)
            counts[name] = int(number(row[column], name, 0)) if column and row.get(column) is not None else None
        return TableRecord(arch=str(cell), dataset=dataset, epochs=epochs, seed=seed, valid_acc=valid, test_acc=test,
                           seconds=seconds, params=counts["params"], flops=counts["flops"],
                           source=f"table:{self.path.name}", extra=extra)
