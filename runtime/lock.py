"""One process per run directory: an exclusive ``fcntl`` lock on ``RUN/search.lock``.

`nader-search run` and `nader-search eval --run-dir` both take it (so it lives in the runtime, the
lower layer), before the database is opened, so a second process refuses without touching
anything. The operating system releases it when the holder exits, even when killed, so a stale
lock never blocks a resume. The file holds the holder's pid, for the message.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .errors import RuntimeToolError

LOCK_NAME = "search.lock"


class RunLocked(RuntimeToolError):
    """Another process is searching in this run directory."""


class RunLock:
    def __init__(self, run_dir):
        self.path = Path(run_dir) / LOCK_NAME
        self.fd = None

    def acquire(self) -> "RunLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            except OSError:
                holder = ""
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise RunLocked(f"{self.path.parent} is in use by another nader-search process{who}; wait for it to "
                            f"finish or stop it, or use another --run-dir") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False
