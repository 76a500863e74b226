"""Files from outside: regular files only, of bounded size, UTF-8 text.

`/dev/zero` would be read until memory runs out and a FIFO blocks `open()` until a writer comes, so
the path is stat'ed first and opened non-blocking, and the opened file is checked again (it may have
been swapped between the two). At most `max_bytes + 1` bytes are ever read.

`read_source` is the one reader of source texts (block files: every `nadc` command, the language
server's unopened documents): it also takes `-` (standard input) and, where the caller allows pipes,
process substitution (`<(cat a.nad)`, an inherited anonymous pipe named `/dev/fd/N`), and returns the
text with `\\n` line ends and no byte-order mark, with what a rewrite needs to keep the file's own form.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import sys
from pathlib import Path
from typing import Optional, Union

from .errors import InputError

#: the default bound on a configuration file (every reader of the project names its own)
DEFAULT_MAX_BYTES = 16 * 1024 * 1024

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_BOM = b"\xef\xbb\xbf"
#: paths that name a descriptor this process inherited: `<(...)` gives /dev/fd/N (compiled when met)
_DESCRIPTOR = r"/dev/fd/(\d+)|/proc/self/fd/(\d+)|/dev/(stdin)"


class FileRefused(InputError):
    """A file that is refused; `reason` is the message without the path, `size` the size of a file
    past the bound (None for any other refusal)."""

    def __init__(self, path, reason: str, size: Optional[int] = None):
        super().__init__(f"{path}: {reason}")
        self.reason = " ".join(reason.split())
        self.size = size


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse_special(path, what: str, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise FileRefused(path, f"the {what} is {_kind(mode)}, not a regular file; give the path of a file")


def _os_error(path, what: str, error: OSError) -> FileRefused:
    if error.errno == errno.ELOOP:
        return FileRefused(path, f"the {what} is a symbolic link that loops; point it at a file")
    return FileRefused(path, f"cannot read the {what}: {error.strerror or error}")


def _too_large(path, what: str, max_bytes: int, size: int) -> FileRefused:
    return FileRefused(path, f"the {what} is larger than {max_bytes:,} bytes; give a smaller file", size)


def read_bounded_bytes(path: Union[str, Path], what: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` of them; InputError otherwise."""
    return _read(path, what, max_bytes, pipes=False)


def _read(path, what: str, max_bytes: int, pipes: bool) -> bytes:
    try:
        mode = os.stat(path).st_mode
        if not (stat.S_ISREG(mode) or (pipes and stat.S_ISFIFO(mode) and _inherited_pipe(path))):
            _refuse_special(path, what, mode)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise _os_error(path, what, error) from None
    try:
        info = os.fstat(fd)
        regular = stat.S_ISREG(info.st_mode)
        if not regular:
            if not (pipes and stat.S_ISFIFO(info.st_mode)):
                _refuse_special(path, what, info.st_mode)
            os.set_blocking(fd, True)  # the writer (`<(cat a.nad)`) is waited for, as `cat` would
        elif info.st_size > max_bytes:  # known without reading: no more of it is read
            raise _too_large(path, what, max_bytes, info.st_size)
        step = info.st_size + 1 if regular else 1 << 16
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(max_bytes + 1 - size, step))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise _os_error(path, what, error) from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise _too_large(path, what, max_bytes, size)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _inherited_pipe(path) -> bool:
    """True for an anonymous pipe this process inherited under a descriptor's name (process
    substitution, `/dev/stdin` fed by a pipe); a named FIFO is refused (nothing may be waiting on it)."""
    match = re.fullmatch(_DESCRIPTOR, str(path))
    if match is None:
        return False
    fd = 0 if match.group(3) else int(match.group(1) or match.group(2))
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    except OSError:  # no /proc (macOS): a descriptor's name is all there is to go by
        return not os.path.isdir("/proc/self")


def decode_utf8(data: bytes, source, what: str) -> str:
    """`data` as UTF-8 (a leading byte-order mark dropped); InputError naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        at = error.start + (len(_BOM) if data.startswith(_BOM) else 0)  # counted from the file's start
        line = data.count(b"\n", 0, at) + 1
        raise FileRefused(source, f"the {what} is not UTF-8 text (byte {at} on line {line}); "
                                  f"save it as UTF-8") from None


def read_bounded_text(path: Union[str, Path], what: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The UTF-8 text of the regular file `path`, of at most `max_bytes` bytes; InputError otherwise."""
    return decode_utf8(read_bounded_bytes(path, what, max_bytes=max_bytes), path, what)


# -- source texts ------------------------------------------------------------------------------------

class SourceText:
    """A source file as read: `text` has `\n` line ends and no byte-order mark; `newline` (the first
    line end: `\n`, `\r\n` or a bare `\r`), `bom` and `mixed` (line ends of more than one kind) say
    how the file was written, so that a rewrite keeps its form (`encode`). A plain class, not a
    dataclass: it is made on `nadc verify`'s start-up path, where a dataclass costs 4 M instructions."""

    __slots__ = ("text", "newline", "bom", "mixed")

    def __init__(self, text: str, newline: str = "\n", bom: bool = False, mixed: bool = False):
        self.text, self.newline, self.bom, self.mixed = text, newline, bom, mixed

    def _key(self) -> tuple:
        return self.text, self.newline, self.bom, self.mixed

    def __eq__(self, other) -> bool:
        return type(other) is SourceText and self._key() == other._key()

    __hash__ = None  # compared by value, not hashed

    def __repr__(self) -> str:
        return "SourceText({!r}, {!r}, {!r}, {!r})".format(*self._key())

    def render(self, text: str) -> str:
        """`text` (with `\\n` line ends) in the file's own form: its line ends, its byte-order mark."""
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        return "\ufeff" + text if self.bom else text

    def encode(self, text: str) -> bytes:
        """`render(text)` as the bytes to write."""
        return self.render(text).encode("utf-8")


def source_text(text: str) -> SourceText:
    """A decoded text read as every reader reads it: one byte-order mark dropped, `\\r\\n` and a bare
    `\\r` each one line end (Python's universal newlines)."""
    bom = text.startswith("\ufeff")
    return _source(text[1:] if bom else text, bom)


def _source(text: str, bom: bool) -> SourceText:
    if "\r" not in text:
        return SourceText(text, "\n", bom)
    crlf = text.count("\r\n")
    kinds = {"\r\n": crlf, "\r": text.count("\r") - crlf, "\n": text.count("\n") - crlf}
    first = min((text.find(end) if end != "\r" else _bare_cr(text), end) for end, n in kinds.items() if n)[1]
    return SourceText(text.replace("\r\n", "\n").replace("\r", "\n"), first, bom,
                      sum(n > 0 for n in kinds.values()) > 1)


def _bare_cr(text: str) -> int:
    """Where the first `\\r` not followed by `\\n` is."""
    at = text.find("\r")
    while at >= 0 and text.startswith("\r\n", at):
        at = text.find("\r", at + 1)
    return at


def read_source(path: Union[str, Path], what: str = "file", *, max_bytes: int = DEFAULT_MAX_BYTES,
                pipes: bool = True, stdin=None) -> SourceText:
    """The text of `path` as a `SourceText`: a regular file, `-` (standard input, or the `stdin`
    stream), or with `pipes` an inherited anonymous pipe (`<(cat a.nad)`); of at most `max_bytes`
    bytes, UTF-8. Anything else (a named FIFO, a device, a directory, a socket) is a `FileRefused`
    naming what it is, without opening it; so is a file past the bound (its `size` set).

    A server that reads documents on a client's behalf passes `pipes=False`: `/dev/fd/0` is its own
    protocol stream."""
    if str(path) == "-":
        return _read_stdin(stdin if stdin is not None else sys.stdin, what, max_bytes)
    data = _read(path, what, max_bytes, pipes)
    return _source(decode_utf8(data, path, what), data.startswith(_BOM))


def _read_stdin(stream, what: str, max_bytes: int) -> SourceText:
    buffer = getattr(stream, "buffer", None)  # bytes, so line ends are seen as they are
    try:
        data = buffer.read(max_bytes + 1) if buffer is not None else stream.read(max_bytes + 1)
    except OSError as error:
        raise FileRefused("<stdin>", f"cannot read the {what}: {error.strerror or error}") from None
    if isinstance(data, str):  # a text stream (tests, embedding callers)
        size = len(data) if data.isascii() else len(data.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise _too_large("<stdin>", what, max_bytes, size)
        return source_text(data)
    if len(data) > max_bytes:
        raise _too_large("<stdin>", what, max_bytes, len(data))
    return _source(decode_utf8(data, "<stdin>", what), data.startswith(_BOM))
