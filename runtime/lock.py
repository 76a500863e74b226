"""One process per run directory: an exclusive ``fcntl`` lock on ``RUN/search.lock``.

`nader-search run` and `nader-search eval --run-dir` both take it (so it lives in the runtime, the
lower layer), before the database is opened, so a second process refuses without touching
anything. The operating system releases it when the holder exits, even when killed, so a stale
lock never blocks a resume. The file holds the holder's pid, for the message. A start that is refused
before anything is recorded removes the file (`release(remove=True)`), and a process that locked a
file removed meanwhile takes the one at the path instead.
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
        while True:
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
                raise RunLocked(f"{self.path.parent} is in use by another nader-search process{who}; wait for it "
                                f"to finish or stop it, or use another --run-dir") from None
            if _is_file_at(fd, self.path):
                break
            os.close(fd)  # its holder removed it (`release(remove=True)`) after we opened it: take the path's own
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self, remove: bool = False) -> None:
        """Unlock; `remove`: also delete the lock file (a refused start leaves nothing behind), while it
        is still held, so that no other process holds a lock on a file no longer at the path."""
        if self.fd is not None:
            try:
                if remove:
                    try:
                        os.unlink(self.path)
                    except OSError:
                        pass
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False


def _is_file_at(fd: int, path: Path) -> bool:
    try:
        held, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)
