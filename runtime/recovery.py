"""`--repair`: copy what can still be read from a damaged run database into a new file beside it.

SQLite's own salvage is the ``.recover`` command of the ``sqlite3`` shell (Debian package
``sqlite3``; the Makefile installs it where it can); Python's sqlite3 module has no equivalent,
so without the shell every table is copied row by row, stepping over rowid ranges that cannot
be read. Both work on a copy in a temporary folder, so the damaged file is never changed, and a
header overwritten with garbage is rebuilt on the copy first (neither reads a file whose first
100 bytes are not SQLite's). The result is ``runs.recovered.sqlite``; using it is the user's
decision (move it over ``runs.sqlite``).

This module knows no table of anyone's: it copies whatever the file's own schema holds. What a
recovered copy shows missing in a layer's tables is told by that layer, through the `lost`
checks it passes down (the search's: architectures whose ids have gaps,
`nader.search.store.lost_architectures`).
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List

from .integrity import RECOVERED_NAME, cell_problem, connect_readonly, text_factory, unreadable_cell

MAGIC = b"SQLite format 3\x00"
_PAGE_SIZES = (4096, 1024, 8192, 16384, 32768, 65536, 512, 2048)
_SHELL_TIMEOUT = 600.0

#: what a recovered copy shows missing, one line each, from a connection to it
LostCheck = Callable[[sqlite3.Connection], List[str]]


@dataclass
class Recovery:
    source: Path
    target: Path
    method: str
    rows: Dict[str, int] = field(default_factory=dict)  # table -> rows recovered
    lost: List[str] = field(default_factory=list)  # what is known to be missing
    notes: List[str] = field(default_factory=list)  # one line per cell rewritten (null_cells)

    def text(self) -> str:
        got = ", ".join(f"{t} {n}" for t, n in sorted(self.rows.items())) or "nothing"
        lines = [f"recovered {self.source} into {self.target} ({self.method}): rows per table: {got}",
                 "lost: " + ("; ".join(self.lost) if self.lost else "nothing that the recovered rows show missing")]
        lines += [f"note: {n}" for n in self.notes]
        if self.rows:
            lines.append(f"to use it, keep the damaged file elsewhere and move {self.target.name} to "
                         f"{self.source.name}, then run the command again")
        return "\n".join(lines)


def _header_ok(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == MAGIC


def _rebuild_header(path: Path, page_size: int) -> None:
    """A fresh 100-byte header (SQLite's defaults) for `page_size`; the size in pages is taken
    from the file's length because the change counters differ (file format, section 1.3)."""
    raw = 1 if page_size == 65536 else page_size
    head = MAGIC + struct.pack(">HBBBBBB", raw, 1, 1, 0, 64, 32, 32)
    head += struct.pack(">IIIIIIIIIIII", 1, 0, 0, 0, 1, 4, 0, 0, 1, 0, 0, 0)
    head += b"\x00" * 20 + struct.pack(">II", 0, 3040001)
    assert len(head) == 100
    with open(path, "r+b") as f:
        f.write(head)


def _fit_page_count(path: Path) -> None:
    """A truncated file's header still counts the pages it had, and SQLite then reads nothing:
    make the count the pages the file holds."""
    with open(path, "r+b") as f:
        head = f.read(100)
        raw = struct.unpack(">H", head[16:18])[0]
        page_size = 65536 if raw == 1 else raw
        if page_size < 512 or page_size & (page_size - 1):
            return
        pages = os.fstat(f.fileno()).st_size // page_size
        if struct.unpack(">I", head[28:32])[0] > pages:
            f.seek(28)
            f.write(struct.pack(">I", pages))


def _readable(path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            conn.execute("SELECT name FROM sqlite_master").fetchall()
            return True
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _working_copy(source: Path, folder: Path) -> Path:
    copy = folder / "damaged.sqlite"
    shutil.copyfile(source, copy)
    wal = source.with_name(source.name + "-wal")
    if wal.is_file():
        shutil.copyfile(wal, folder / "damaged.sqlite-wal")
    if _header_ok(copy):
        _fit_page_count(copy)
    elif copy.stat().st_size >= 512:
        original = copy.read_bytes()[:100]
        for size in _PAGE_SIZES:
            _rebuild_header(copy, size)
            if _readable(copy):
                break
        else:
            with open(copy, "r+b") as f:
                f.write(original)
    return copy


def recover(source, lost: Iterable[LostCheck] = ()) -> Recovery:
    """Salvage the database at `source` into RECOVERED_NAME beside it (replacing an older one);
    `lost` say what the copy lacks in their tables."""
    source = Path(source)
    target = source.with_name(RECOVERED_NAME)
    partial = target.with_name(target.name + ".partial")
    with tempfile.TemporaryDirectory(prefix="nader-recover-") as folder:
        copy = _working_copy(source, Path(folder))
        if partial.exists():
            partial.unlink()
        shell = shutil.which("sqlite3")
        if shell and _shell_recover(shell, copy, partial):
            result = Recovery(source, target, "sqlite3 .recover")
        else:
            if partial.exists():
                partial.unlink()
            result = Recovery(source, target, "row-by-row copy")
            _copy_rows(copy, partial, result)
    _tally(partial, result, lost)
    os.replace(partial, target)
    return result


def _shell_recover(shell: str, copy: Path, target: Path) -> bool:
    try:
        dump = subprocess.run([shell, str(copy), ".recover"], capture_output=True, timeout=_SHELL_TIMEOUT)
        if dump.returncode != 0 or not dump.stdout.strip():  # e.g. a shell built without sqlite_dbpage
            return False
        load = subprocess.run([shell, str(target)], input=dump.stdout, capture_output=True, timeout=_SHELL_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return False
    return load.returncode == 0 and target.is_file()


def _copy_rows(copy: Path, target: Path, result: Recovery) -> None:
    dst = sqlite3.connect(target, isolation_level=None)
    try:
        try:
            src = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
            schema = src.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        except sqlite3.DatabaseError as exc:
            result.lost.append(f"everything: the table definitions cannot be read ({exc}); only a scan of the "
                               f"pages can find rows then: the sqlite3 shell's .recover, where it is built with it")
            return
        tables = [(n, sql) for t, n, sql in schema if t == "table" and not n.startswith("sqlite_")]
        for name, sql in tables:
            dst.execute(sql)
            skipped = _copy_table(src, dst, name)
            if skipped:
                result.lost.append(f"{name}: {skipped} unreadable stretch(es) of rows skipped")
        for t, name, sql in schema:
            if t == "index":
                try:
                    dst.execute(sql)
                except sqlite3.Error as exc:
                    result.lost.append(f"index {name} not rebuilt ({exc})")
        src.close()
    finally:
        dst.close()


def _copy_table(src, dst, name: str) -> int:
    """Copy every readable row of `name` in rowid order; returns how many stretches were skipped."""
    quoted = '"' + name.replace('"', '""') + '"'
    cols = len(src.execute(f"PRAGMA table_info({quoted})").fetchall())
    insert = f"INSERT OR IGNORE INTO {quoted} VALUES ({', '.join('?' * cols)})"
    last, skipped = -(2 ** 63), 0
    while True:  # each pass starts past `last`, which only grows
        dst.execute("BEGIN")
        try:
            for row in src.execute(f"SELECT rowid, * FROM {quoted} WHERE rowid > ? ORDER BY rowid", (last,)):
                dst.execute(insert, row[1:])
                last = row[0]
            return skipped
        except sqlite3.DatabaseError:
            skipped += 1
            nxt = _next_readable(src, quoted, last)
            if nxt is None:
                return skipped
            last = nxt
            try:  # the row the probe reached, on its own
                row = src.execute(f"SELECT * FROM {quoted} WHERE rowid = ?", (nxt,)).fetchone()
                if row is not None:
                    dst.execute(insert, row)
            except sqlite3.DatabaseError:
                pass
        finally:
            dst.execute("COMMIT")


def _next_readable(src, quoted: str, last: int):
    """The first rowid past a damaged stretch that a seek can reach (steps double: 40-odd probes at most)."""
    step = 1
    while step < 2 ** 62:
        try:
            row = src.execute(f"SELECT rowid FROM {quoted} WHERE rowid >= ? ORDER BY rowid LIMIT 1",
                              (last + step,)).fetchone()
            return None if row is None else row[0]
        except sqlite3.DatabaseError:
            step *= 2
    return None


def _tally(target: Path, result: Recovery, lost: Iterable[LostCheck] = ()) -> None:
    """Rows per table in the recovered file, and what the `lost` checks find missing."""
    conn = sqlite3.connect(target)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                            "AND name NOT LIKE 'sqlite_%'")]
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            result.rows[name] = conn.execute(f"SELECT COUNT(*) FROM {quoted}").fetchone()[0]
        if result.rows.get("lost_and_found"):
            result.lost.append(f"{result.rows['lost_and_found']} rows whose table could not be told "
                               f"(kept in table lost_and_found)")
        for check in lost:
            result.lost.extend(check(conn))
    finally:
        conn.close()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def unreadable_cells(conn: sqlite3.Connection) -> list:
    """(table, rowid, row label, column, why, NOT NULL) of every text cell no reader can use: not
    UTF-8, or JSON nested deeper than the readers parse."""
    conn.text_factory = text_factory
    found = []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        info = conn.execute(f"PRAGMA table_info({_quoted(table)})").fetchall()  # cid, name, type, notnull, dflt, pk
        names = [c[1] for c in info]
        keys = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]] or ["rowid"]
        for row in conn.execute(f"SELECT rowid, * FROM {_quoted(table)}"):
            values = dict(zip(names, row[1:]))
            label = " ".join(f"{k}={row[0] if k == 'rowid' else values[k]}" for k in keys)
            for (_, name, _, notnull, _, _), value in zip(info, row[1:]):
                why = unreadable_cell(value) if isinstance(value, str) else ""
                if why:
                    found.append((table, row[0], label, name, why, bool(notnull)))
    return found


def null_cells(source, lost: Iterable[LostCheck] = ()) -> "Recovery | None":
    """`--repair` on a store that passes the integrity check: a copy (RECOVERED_NAME beside it)
    with every unreadable cell rewritten as NULL (as '' where the column allows no NULL); None
    when there is none. The original is not changed."""
    source = Path(source)
    src = connect_readonly(source)  # works in a read-only directory too (nothing to repair there: a note)
    try:
        cells = unreadable_cells(src)
        if not cells:
            return None
        target = source.with_name(RECOVERED_NAME)
        partial = target.with_name(target.name + ".partial")
        if partial.exists():
            partial.unlink()
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst)
            result = Recovery(source, target, "unreadable cells set to NULL")
            with dst:
                for table, rowid, label, column, why, notnull in cells:
                    dst.execute(f"UPDATE {_quoted(table)} SET {_quoted(column)} = ? WHERE rowid = ?",
                                ("" if notnull else None, rowid))
                    done = "set to empty text (the column allows no NULL)" if notnull else "set to NULL"
                    result.notes.append(cell_problem(table, label, column, why).replace("; left out", f"; {done}"))
            result.lost.append(f"{len(cells)} unreadable cell(s), listed below")
        finally:
            dst.close()
    finally:
        src.close()
    _tally(partial, result, lost)
    os.replace(partial, target)
    return result
