"""Failures of the machine, not of the architecture: a full disk, an I/O error, a read-only or
vanished file, a database that cannot be written.

A trial stopped by one of these says nothing about its architecture, so it is not ``failed``:
its result is ``interrupted`` (error kind ``infrastructure``), the run stops at once with one
line saying what to fix (a second trial would hit the same disk), and the next run retries it
from its last checkpoint. Only what the architecture itself raises (building, the forward pass,
NaN, out of memory) fails it.
"""
from __future__ import annotations

import errno
import sqlite3
from typing import Optional

from .errors import RuntimeToolError
from .integrity import StoreError, unusable

INTERRUPTED = "interrupted"
E_INFRA = "infrastructure"
RESUME = "run the same command again to resume"

# SQLite's result codes for a machine problem (Python 3.11 sets sqlite_errorname).
_SQLITE_INFRA = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM",
                 "SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_NOLFS")


class InfrastructureError(RuntimeToolError):
    """A run stopped by the machine (disk full, I/O error, permissions); a resume retries."""


def describe_os_error(exc: OSError, path=None) -> str:
    """One line naming the file and the fix, e.g. `disk full writing RUN/checkpoints/x.pt: free
    space and run the same command again to resume`."""
    where = path or exc.filename or "a file of the run"
    code = exc.errno
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return f"disk full writing {where}: free space and {RESUME}"
    if code == errno.EROFS:
        return f"read-only file system writing {where}: remount it writable and {RESUME}"
    if code in (errno.EACCES, errno.EPERM):
        return f"permission denied on {where}: make it writable by this user and {RESUME}"
    if code == errno.EIO:
        return f"I/O error on {where}: check the disk and {RESUME}"
    if code == errno.ENOENT:
        return f"{where} vanished while the run used it: {RESUME}"
    return f"{exc.strerror or exc} on {where}: fix it and {RESUME}"


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def machine_sqlite_error(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorname", "") or "").startswith(_SQLITE_INFRA)


def infrastructure_reason(exc: BaseException, db_path=None) -> Optional[str]:
    """The one-line reason when `exc` (or what it was raised from) is a machine problem, else None."""
    for e in _chain(exc):
        if isinstance(e, (StoreError, InfrastructureError)):
            return str(e)
        if isinstance(e, OSError) and e.errno != errno.ENOMEM:
            return describe_os_error(e)
        if machine_sqlite_error(e):
            return unusable(db_path or "the run's database (runs.sqlite)", e, writing=True)
    return None
