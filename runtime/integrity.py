"""Can a run's database be trusted? Checked once when a command opens a run, before any read or write.

A file that is empty, not SQLite, or fails ``PRAGMA quick_check`` stops the command with one
line naming the file, instead of being taken for a new run or read with silent gaps (SQLite
answers queries on a damaged file until it trips over the bad page). ``--repair`` then salvages
what can still be read into ``runs.recovered.sqlite`` beside it (see :mod:`.recovery`); the
original is never changed.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from nader.inputs import DEFAULT_MAX_DEPTH, InputError, finite_number, nesting_depth

from .errors import RuntimeToolError

RECOVERED_NAME = "runs.recovered.sqlite"
DB_NAME_HINT = "runs.sqlite"  # store.DB_NAME (store imports this module)
REPAIR_ADVICE = f"run the same command with --repair to copy what can be read into {RECOVERED_NAME}"
MAX_CELL_DEPTH = DEFAULT_MAX_DEPTH  # JSON nesting a cell may have (the search writes 3 levels at most)


class BadText(str):
    """A TEXT cell that is not UTF-8: its text with U+FFFD in place of the bad bytes, marked so
    that the readers leave it out with a warning instead of failing the whole query."""


def text_factory(raw: bytes) -> str:
    """sqlite3's text_factory for every connection to a run: one undecodable cell is a BadText,
    not a UnicodeDecodeError for the whole query."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return BadText(raw.decode("utf-8", "replace"))


def json_depth(text: str, limit: int = MAX_CELL_DEPTH) -> int:
    """The bracket nesting of JSON `text` (strings skipped), counted up to `limit` + 1 (nader.inputs):
    bounded before json.loads, whose recursion a few thousand brackets exhaust."""
    if text.count("[") + text.count("{") <= limit:
        return 0
    return nesting_depth(text, "json", limit)


def unreadable_cell(value) -> str:
    """Why a cell's text cannot be used ("" when it can): not UTF-8, or JSON nested too deep."""
    if isinstance(value, BadText):
        return "not valid UTF-8"
    if isinstance(value, str) and value[:1] in "[{" and json_depth(value) > MAX_CELL_DEPTH:
        return f"JSON nested deeper than {MAX_CELL_DEPTH} levels"
    return ""


class StoreError(RuntimeToolError):
    """The run's database cannot be used as it is; the message names the file and what to do."""

    def __init__(self, message: str, path=None):
        super().__init__(message)
        self.path = Path(path) if path is not None else None


class StoreDamaged(StoreError):
    """The database is corrupt (not SQLite, truncated, failing quick_check): --repair may help."""


class IndexMismatch(StoreDamaged):
    """The tables read well, but an index disagrees with its table (only ``PRAGMA integrity_check``
    sees it): a reader may go on with a warning, a writer refuses (writes through such an index
    spread the damage); --repair rebuilds the indexes in the copy."""

    def __init__(self, message: str, path=None, indexes=()):
        super().__init__(message, path)
        self.indexes = tuple(indexes)


# integrity_check's words for an index that disagrees with its table (SQLite's pragma.c), before
# the index's name; plain text, no regular expression: compiling one costs every command's start-up
_INDEX_PROBLEMS = ("missing from index ", "entries in index ", "entry in index ")


def _index_of(problem: str):
    """The index an integrity_check line says disagrees with its table, or None."""
    for words in _INDEX_PROBLEMS:
        if words in problem:
            return problem.partition(words)[2].split(" ", 1)[0] or None
    return None


class StoreEmpty(StoreError):
    """A 0-byte database: nothing to recover, and not a new run either."""


def _has_wal(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


def connect_readonly(path, timeout: float = 30.0) -> sqlite3.Connection:
    """A read-only connection that also works in a read-only directory: SQLite's WAL mode wants
    to create ``-shm`` beside the file; when it cannot and no ``-wal`` holds uncommitted pages,
    the file alone is the whole database and is opened as immutable."""
    path = Path(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
    conn.text_factory = text_factory
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if not _cannot_open(exc) or _has_wal(path):
            raise store_error(path, exc, writing=False) from None
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise store_error(path, exc, writing=False) from None
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True, timeout=timeout)
    conn.text_factory = text_factory
    return conn


def _cannot_open(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))


def _corrupt(exc: BaseException) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


def store_error(path, exc: BaseException, *, writing: bool) -> StoreError:
    """The StoreError (StoreDamaged for corruption) for an sqlite3 or OS error on `path`."""
    return (StoreDamaged if _corrupt(exc) else StoreError)(unusable(path, exc, writing=writing), path)


def unusable(path, exc: BaseException, *, writing: bool) -> str:
    """One line saying why the database at `path` cannot be opened or written, and what to do."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    reason = str(exc) if not isinstance(exc, OSError) else (exc.strerror or str(exc))
    if _corrupt(exc):
        return f"{path} is damaged ({reason}); {REPAIR_ADVICE}"
    if name == "SQLITE_FULL":
        return f"disk full writing {path}: free space and run the same command again to resume"
    if name.startswith("SQLITE_READONLY") or name in ("SQLITE_PERM", "SQLITE_AUTH") or \
            isinstance(exc, PermissionError):
        verb = "write" if writing else "read"
        return f"cannot {verb} {path}: permission denied or read-only ({reason}); make it and its directory " \
               f"writable by this user"
    if name.startswith("SQLITE_CANTOPEN"):
        return f"cannot open {path} ({reason}); check that it and its directory exist and are accessible"
    return f"cannot use {path}: {reason}"


def check_database(path, *, full: bool = False) -> None:
    """Raise StoreError unless `path` is absent (a new run) or an SQLite database that passes
    ``PRAGMA quick_check`` (which reads every page but skips the index cross-checks of
    integrity_check: about 0.1 s for a 36 MB database on this project's 2-core machine).
    `full`: ``PRAGMA integrity_check`` instead, which also finds an index that disagrees with its
    table (IndexMismatch, when that is all it finds); a command that writes into the store refuses
    that, since writes through such an index spread the damage, and a reader warns."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}", path) from None
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a run database", path)
    if size == 0 and not _has_wal(path):
        raise StoreEmpty(f"{path} is empty (0 bytes), so it holds no run; delete it to start a new run there", path)
    try:
        conn = connect_readonly(path)
    except sqlite3.Error as exc:
        raise store_error(path, exc, writing=False) from None
    try:
        check = "integrity_check" if full else "quick_check"
        problems = [r[0] for r in conn.execute(f"PRAGMA {check}").fetchall()]
    except sqlite3.DatabaseError as exc:
        raise store_error(path, exc, writing=False) from None
    finally:
        conn.close()
    if problems != ["ok"]:
        more = f" and {len(problems) - 1} more problems" if len(problems) > 1 else ""
        message = f"{path} is damaged ({check}: {problems[0][:120]}{more}); {REPAIR_ADVICE}"
        indexes = [i for i in map(_index_of, problems) if i]
        if len(indexes) == len(problems):
            raise IndexMismatch(message, path, dict.fromkeys(indexes))
        raise StoreDamaged(message, path)


def cell_problem(table: str, row: str, column: str, what: str) -> str:
    """The warning for one unusable cell: table, row and column, and what is done instead."""
    return f"{DB_NAME_HINT}: table {table}, row {row}, column {column}: {what}; left out"


def json_cell(value, table: str, row: str, column: str, problems: list, expect: tuple = (dict, list)):
    """A JSON column decoded; None (and a warning in `problems`) when it is not valid JSON or not
    of the expected type, so one damaged cell does not hide the rest of the run."""
    if value is None or value == "":
        return None
    if not isinstance(value, (str, bytes)):
        problems.append(cell_problem(table, row, column, f"expected JSON text, found {type(value).__name__}"))
        return None
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            value = BadText(value.decode("utf-8", "replace"))
    why = unreadable_cell(value) or (f"JSON nested deeper than {MAX_CELL_DEPTH} levels"
                                     if json_depth(value) > MAX_CELL_DEPTH else "")
    if why:
        problems.append(cell_problem(table, row, column, why))
        return None
    try:
        data = json.loads(value)
    except RecursionError:
        problems.append(cell_problem(table, row, column, f"JSON nested deeper than {MAX_CELL_DEPTH} levels"))
        return None
    except ValueError as exc:
        problems.append(cell_problem(table, row, column, f"not valid JSON ({exc})"))
        return None
    if expect and not isinstance(data, expect):
        names = " or ".join("an object" if t is dict else "a list" if t is list else t.__name__ for t in expect)
        problems.append(cell_problem(table, row, column, f"expected {names}, found {type(data).__name__}"))
        return None
    return data


def number_cell(value, table: str, row: str, column: str, problems: list):
    """A REAL/INTEGER column as a finite number; None (and a warning) for text such as 'NaN',
    infinities, or anything else a damaged or hand-edited row holds."""
    if value is None:
        return None
    try:
        return finite_number(value, column)
    except InputError:
        problems.append(cell_problem(table, row, column, f"expected a number, found {value!r:.40}"))
        return None
