"""Writing files so that no failure loses one: every file the tools write goes through `write_file`.

A regular file is written whole to a temporary file beside it, flushed to the disk (`fsync`) and
renamed over it, so a full disk, a read-only file, a crash or Ctrl-C leave the old file byte for byte
(or no file); the target keeps its mode (and, for root, its owner). A symbolic link is followed: what
it points to is replaced and the link stays. A device, a FIFO or a socket (`/dev/null`, `>(gzip >
x)`) is written as it is, and so is a descriptor's name (`/dev/stdout`, `/dev/fd/N`: the descriptor
the shell gave). The caller reports a write only after `write_file` returns. `write_files` writes
several files all or none (every temporary file first, then the renames), for a command whose outputs
belong together (a model and its weights).

`claim_outputs` is for a command that writes several files: it refuses, before anything is written,
two outputs that are one file (the same path, a symbolic link to it, a hard link) and any output the
caller's `refuse` names (a run directory's own files: `nader.runtime.outputs`).
"""
from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Sequence, Tuple, Union

from .errors import InputError

#: a descriptor's name (compiled when first used: `nadc verify` imports this module and writes nothing)
_DESCRIPTOR = r"/dev/(stdout|stderr)|/dev/fd/(\d+)|/proc/self/fd/(\d+)"


class WriteRefused(InputError):
    """A file that was not written (the message says why, and that the old one is unchanged), or an
    output refused before anything was written."""


def _descriptor(path) -> Optional[int]:
    match = re.fullmatch(_DESCRIPTOR, str(path))
    if match is None:
        return None
    name, *numbers = match.groups()
    return {"stdout": 1, "stderr": 2}[name] if name else int(next(n for n in numbers if n))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_file(path: Union[str, Path], data: Union[bytes, str], *, what: str = "file") -> Path:
    """Write `data` (text is written as UTF-8) to `path` as the module says; the path written
    (a symbolic link's target). Raises WriteRefused, with one line, when it could not: then the old
    file, if any, is as it was."""
    return write_files([(path, data)], what=what)[0]


def write_files(items: Sequence[Tuple[Union[str, Path], Union[bytes, str]]], *, what: str = "file") -> List[Path]:
    """Write several files all or none, each as `write_file` writes one: every regular file goes to
    its temporary file first (fsynced), and only when all are there are they renamed over their
    targets, so a full disk or a read-only target leaves every file as it was. Devices and
    descriptors (`/dev/stdout`) are streams: they are written after the temporary files, before the
    renames. The paths written, in order; WriteRefused (one line) when one could not be."""
    plans = [_plan(path, data, what) for path, data in items]
    staged: List[Optional[Path]] = []
    try:
        for (path, target, data, info, special) in plans:
            staged.append(None if special else _stage(path, target, data, info, what))
        for (path, target, data, info, special) in plans:
            if special == "descriptor":
                _write_descriptor(path, data, what)
            elif special == "special":
                _write_special(path, target, data, what)
        for temporary, (path, target, data, info, special) in zip(staged, plans):
            if temporary is not None:
                try:
                    os.replace(temporary, target)
                except OSError as error:
                    raise WriteRefused(_failed(path, what, error, info)) from None
                _sync_folder(target.parent)
    finally:
        for temporary in staged:
            if temporary is not None and os.path.lexists(temporary):
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
    return [target for (path, target, data, info, special) in plans]


def _plan(path, data: Union[bytes, str], what: str) -> tuple:
    """(path, target, bytes, the target's stat or None, "descriptor" | "special" | None), or WriteRefused."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if _descriptor(path) is not None:
        return path, Path(path), data, None, "descriptor"
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise WriteRefused(f"cannot write the {what} {path}: {error.strerror or error}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise WriteRefused(f"cannot write the {what} {path}: it is a directory; give a file's path")
    if info is not None and not stat.S_ISREG(info.st_mode):
        return path, target, data, info, "special"
    if info is not None and not os.access(target, os.W_OK):
        raise WriteRefused(f"cannot write the {what} {path}: it is read-only (Permission denied); it is unchanged")
    return path, target, data, info, None


def _write_descriptor(path, data: bytes, what: str) -> None:
    """A descriptor's name: the descriptor the shell gave, after what was printed before."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        _write_all(_descriptor(path), data)
    except OSError as error:
        raise WriteRefused(f"cannot write the {what} to {path}: {error.strerror or error}") from None


def _write_special(path, target: Path, data: bytes, what: str) -> None:
    """A device, FIFO or socket: there is no file to replace, the bytes go to it."""
    try:
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as error:
        raise WriteRefused(f"cannot write the {what} to {path}: {error.strerror or error}") from None


def _stage(path, target: Path, data: bytes, info: Optional[os.stat_result], what: str) -> Path:
    """`data` in a temporary file beside `target`, with its mode (and owner, for root), on the disk."""
    temporary = target.parent / f".{target.name[:120]}.{os.urandom(4).hex()}.tmp"
    mode = 0o666 if info is None else stat.S_IMODE(info.st_mode)
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    except OSError as error:
        raise WriteRefused(_failed(path, what, error, info)) from None
    try:
        try:
            if info is not None:
                os.fchmod(fd, mode)  # the umask may have taken bits the file had
                if os.geteuid() == 0 and (info.st_uid, info.st_gid) != (0, os.getegid()):
                    try:  # root keeps the owner a user's file had
                        os.fchown(fd, info.st_uid, info.st_gid)
                    except OSError:
                        pass
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise WriteRefused(_failed(path, what, error, info)) from None
        raise
    return temporary


def _sync_folder(folder: Path) -> None:
    """The rename itself reaches the disk."""
    try:
        folder_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)
    except OSError:
        pass


def _failed(path, what: str, error: OSError, info) -> str:
    left = "it is unchanged" if info is not None else "nothing was written"
    return f"cannot write the {what} {path}: {error.strerror or error}; {left}"


def _identity(path) -> tuple:
    number = _descriptor(path)
    try:
        info = os.fstat(number) if number is not None else os.stat(path)
        return ("file", info.st_dev, info.st_ino)
    except OSError:
        return ("path", os.path.realpath(path)) if number is None else ("descriptor", number)


def claim_outputs(paths: Iterable[Union[str, Path]], *, refuse: Optional[Callable[[Path], Optional[str]]] = None,
                  ) -> list[Path]:
    """The outputs of one command, checked before any is written: WriteRefused when two are one
    file, or when `refuse(path)` gives a reason (one line: `cannot write PATH: REASON`)."""
    seen: dict = {}
    claimed = []
    for path in paths:
        path = Path(path)
        key = _identity(path)
        if key in seen:
            same = "twice" if str(seen[key]) == str(path) else f"as well as {seen[key]}, which is the same file"
            raise WriteRefused(f"cannot write {path} {same}: each output needs a path of its own")
        seen[key] = path
        reason = refuse(path) if refuse is not None else None
        if reason:
            raise WriteRefused(f"cannot write {path}: {reason}")
        claimed.append(path)
    return claimed
