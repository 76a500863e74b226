"""Files from outside: regular files only, of bounded size, UTF-8 text.

`/dev/zero` would be read until memory runs out and a FIFO blocks `open()` until a writer comes, so
the path is stat'ed first and opened non-blocking, and the opened file is checked again (it may have
been swapped between the two). At most `max_bytes + 1` bytes are ever read.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Union

from .errors import InputError

#: the default bound on a configuration file (every reader of the project names its own)
DEFAULT_MAX_BYTES = 16 * 1024 * 1024

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse_special(path, what: str, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: the {what} is {_kind(mode)}, not a regular file; give the path of a file")


def _os_error(path, what: str, error: OSError) -> InputError:
    if error.errno == errno.ELOOP:
        return InputError(f"{path}: the {what} is a symbolic link that loops; point it at a file")
    return InputError(f"{path}: cannot read the {what}: {error.strerror or error}")


def read_bounded_bytes(path: Union[str, Path], what: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` of them; InputError otherwise."""
    try:
        _refuse_special(path, what, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise _os_error(path, what, error) from None
    try:
        with os.fdopen(fd, "rb") as file:
            _refuse_special(path, what, os.fstat(file.fileno()).st_mode)
            data = file.read(max_bytes + 1)
    except OSError as error:
        raise _os_error(path, what, error) from None
    if len(data) > max_bytes:
        raise InputError(f"{path}: the {what} is larger than {max_bytes:,} bytes; give a smaller file")
    return data


def decode_utf8(data: bytes, source, what: str) -> str:
    """`data` as UTF-8 (a leading byte-order mark dropped); InputError naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(f"{source}: the {what} is not UTF-8 text (byte {error.start} on line {line}); "
                         f"save it as UTF-8") from None


def read_bounded_text(path: Union[str, Path], what: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The UTF-8 text of the regular file `path`, of at most `max_bytes` bytes; InputError otherwise."""
    return decode_utf8(read_bounded_bytes(path, what, max_bytes=max_bytes), path, what)
