"""`nadc lsp`'s transport: the base protocol's frames, read strictly from a byte stream, and the
JSON-RPC envelope and lifecycle checked before pygls sees a message.

pygls reads frames trustingly: a `Content-Length` of 10^12 is one read of that size, and a header
its pattern does not match (lowercase, LF-only, a wrong length) leaves its loop waiting for a body
that never starts, alive but deaf. So the server reads here instead (docs/editors.md, "What the
server accepts", says the same to users):

* headers are `Name: value` lines ended by CRLF or LF, names case-insensitive, at most
  `MAX_HEADER_BYTES` of them; `Content-Length` is decimal digits, at most `MAX_BODY`; other
  headers (`Content-Type`) are read past, and the body is read as UTF-8 whatever they say;
* a bad frame is answered with an error (its id when the message can be read after all, else
  null), and reading resynchronises: it skips to the next `Content-Length`, so one bad frame costs
  at most itself. A length too short or too long is noticed from the bytes around the body: the
  JSON value ends before the length does and the next header follows, or it runs on past it.

No pygls here: `lsp_server.py` hands pygls the messages this module admits.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

#: JSON-RPC's and LSP's error codes, as the server answers them.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803

#: The most bytes of one message's body: 16 times a block file's default `text-bytes`, room for a
#: document escaped in JSON. Past it the frame is refused unread (-32600), whatever the limits say.
MAX_BODY = 16 << 20
#: The most bytes of one header line, and of a frame's headers together.
MAX_HEADER_LINE = 1024
MAX_HEADER_BYTES = 8192
_CHUNK = 1 << 16
#: Where reading starts again after a bad frame (and what shows a length was too long).
_MARKER = re.compile(rb"content-length", re.IGNORECASE)
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name
#: A whole `Content-Length` line: never inside a JSON body (JSON strings hold no raw line end, and
#: letters outside strings spell only true, false and null), so where one shows in a body, that
#: body was cut short or ran on, and the next frame begins there.
_HEADER_LINE = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)

log = logging.getLogger("nadc.lsp")


@dataclass(frozen=True)
class Refusal:
    """A message the server refuses: answered with `code` and `message`, with `id` when known."""

    code: int
    message: str
    id: Union[int, str, None] = None


@dataclass(frozen=True)
class Message:
    """A JSON-RPC message whose envelope is well-formed."""

    kind: str  # "request", "notification" or "response"
    method: Optional[str]
    id: Union[int, str, None]
    data: dict


class _Bad(Exception):
    def __init__(self, message: str, code: int = PARSE_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _shown(data: bytes, most: int = 40) -> str:
    text = data[:most].decode("utf-8", "replace")
    return repr(text)[1:-1] + ("..." if len(data) > most else "")


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_json(data: bytes) -> Any:
    """The JSON value of a body: UTF-8, no NaN or Infinity, nothing after the value."""
    return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)


def _not_json(error: BaseException) -> str:
    if isinstance(error, UnicodeDecodeError):
        return f"the body is not UTF-8 (byte {error.start})"
    if isinstance(error, RecursionError):
        return "the body is JSON nested too deeply"
    return f"the body is not JSON: {str(error)[:120]}"


def _value_at(data: bytes):
    """(the JSON value at the start of `data`, the offset just after it), or None."""
    text = data.decode("utf-8", "surrogateescape")
    start = len(text) - len(text.lstrip())
    try:
        value, end = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return value, len(text[:end].encode("utf-8", "surrogateescape"))


def _id_of(value: Any):
    found = value.get("id") if isinstance(value, dict) else None
    return found if _valid_id(found) else None


def _valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


class FrameReader:
    """Frames from `read(n)` (up to n bytes; b"" at the end): each `next()` is a `Message`, a
    `Refusal` (of a bad frame, or of JSON that is no JSON-RPC message), or None at the end."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._buf = bytearray()
        self._eof = False
        self._lost = False  # after a bad frame: skip to the next header

    def _fill(self) -> bool:
        if self._eof:
            return False
        data = self._read(_CHUNK)
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    def next(self) -> Union[Message, Refusal, None]:
        if self._lost and not self._resynchronise():
            return None
        consumed = bytearray()
        try:
            length = self._headers(consumed)
        except _Bad as error:
            # look for the next header from the bad frame's second byte on: its own lines may hold
            # it (`garbageContent-Length: ...`), and each bad frame moves reading on by one byte
            if consumed:
                self._buf[:0] = consumed[1:]
            else:
                del self._buf[:1]
            self._lost = True
            return Refusal(error.code, f"bad frame: {error}")
        if length is None:
            return None
        return self._body(length)

    def _resynchronise(self) -> bool:
        skipped = 0
        while True:
            found = _MARKER.search(self._buf)
            if found:
                skipped += found.start()
                del self._buf[:found.start()]
                break
            keep = len(_MARKER.pattern) - 1  # a header cut between two reads
            skipped += max(0, len(self._buf) - keep)
            del self._buf[:-keep]
            if not self._fill():
                return False
        self._lost = False
        if skipped:
            log.warning("skipped %d bytes to the next Content-Length header", skipped)
        return True

    def _line(self, consumed: bytearray) -> Optional[bytes]:
        """The next line without its end (CRLF or LF), its bytes added to `consumed`; None at the end
        of the input."""
        while True:
            end = self._buf.find(b"\n", 0, MAX_HEADER_LINE + 1)
            if end >= 0:
                line = bytes(self._buf[:end])
                del self._buf[:end + 1]
                consumed += line + b"\n"
                return line[:-1] if line.endswith(b"\r") else line
            if len(self._buf) > MAX_HEADER_LINE:
                raise _Bad(f"a header line longer than {MAX_HEADER_LINE} bytes: {_shown(self._buf)}")
            if not self._fill():
                if self._buf:
                    log.warning("the input ended inside a header: %s", _shown(self._buf))
                return None

    def _headers(self, consumed: bytearray) -> Optional[int]:
        length, size, lines = None, 0, 0
        while True:
            line = self._line(consumed)
            if line is None:
                return None
            if not line.strip():
                if lines:
                    break
                consumed.clear()
                continue  # blank lines between messages
            lines += 1
            size += len(line) + 2
            if size > MAX_HEADER_BYTES:
                raise _Bad(f"more than {MAX_HEADER_BYTES} bytes of headers")
            name, colon, value = line.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):
                raise _Bad(f"{_shown(line)} is not a header (`Name: value`)")
            if name.lower() == b"content-length":
                found = self._length(value)
                if length is not None and found != length:
                    raise _Bad(f"two Content-Length headers: {length} and {found}")
                length = found
        if length is None:
            raise _Bad("a frame without Content-Length")
        return length

    @staticmethod
    def _length(value: bytes) -> int:
        digits = value.strip(b" \t")
        if not digits.isdigit():  # ASCII digits only: no sign, no space inside
            raise _Bad(f"Content-Length {_shown(digits)} is not a number of bytes")
        if int(digits) > MAX_BODY:  # a line holds at most 1,024 digits: int() is quick
            raise _Bad(f"Content-Length {_shown(digits, 20)} is over the limit of {MAX_BODY:,} bytes",
                       INVALID_REQUEST)
        return int(digits)

    def _body(self, length: int) -> Union[Message, Refusal, None]:
        scanned = 0
        while len(self._buf) < length:
            # a length too long: the next frame's header shows where the body was to go on
            found = _HEADER_LINE.search(self._buf, max(0, scanned - MAX_HEADER_LINE))
            if found:
                prefix = bytes(self._buf[:found.start()])
                del self._buf[:found.start()]
                return self._cut_short(prefix, length)
            scanned = len(self._buf)
            if not self._fill():
                if self._buf:
                    log.warning("the input ended inside a message of %d bytes, %d of them sent", length,
                                len(self._buf))
                return None
        body = bytes(self._buf[:length])
        del self._buf[:length]
        try:
            return envelope(parse_json(body))
        except (ValueError, RecursionError) as error:
            return self._recover(body, error)

    @staticmethod
    def _cut_short(prefix: bytes, length: int) -> Refusal:
        """The refusal of a frame whose body ends early, at the next frame's header."""
        value = _value_at(prefix)
        if value is not None and isinstance(value[0], dict) and not prefix[value[1]:].strip():
            return Refusal(PARSE_ERROR, f"bad frame: Content-Length {length} is more than the message's "
                           f"{value[1]} bytes", _id_of(value[0]))
        return Refusal(PARSE_ERROR, f"bad frame: {_shown(prefix)} is not a JSON message, and the next "
                       "header follows it")

    def _recover(self, body: bytes, error: BaseException) -> Refusal:
        """A body that is not JSON: a length that cut the message short or ran past it, when what
        has arrived shows it, else a parse error (and reading skips to the next header)."""
        found = _HEADER_LINE.search(body)
        if found:  # the next frame begins inside it
            self._buf[:0] = body[found.start():]
            return self._cut_short(body[:found.start()], len(body))
        value = _value_at(body)
        if value is not None:
            rest = body[value[1]:].lstrip()
            if rest and (_MARKER.match(rest) or b"content-length".startswith(rest.lower())):
                self._buf[:0] = rest  # the next frame's header, cut into by a length too long
                return Refusal(PARSE_ERROR, f"bad frame: Content-Length {len(body)} is more than the message's "
                               f"{value[1]} bytes", _id_of(value[0]))
            if not rest:
                return Refusal(PARSE_ERROR, f"bad frame: {_not_json(error)}", _id_of(value[0]))
            return Refusal(PARSE_ERROR, f"bad frame: {_shown(rest)} after the JSON value", _id_of(value[0]))
        whole = _value_at(body + self._buf)  # a length too short: the message runs on past it
        if whole is not None and whole[1] > len(body) and isinstance(whole[0], dict):
            del self._buf[:whole[1] - len(body)]
            return Refusal(PARSE_ERROR, f"bad frame: Content-Length {len(body)} is less than the message's "
                           f"{whole[1]} bytes", _id_of(whole[0]))
        self._lost = True
        return Refusal(PARSE_ERROR, f"bad frame: {_not_json(error)}")


def envelope(value: Any) -> Union[Message, Refusal]:
    """A JSON value as a JSON-RPC message, or why it is not one (-32600)."""
    if isinstance(value, list):
        return Refusal(INVALID_REQUEST, "a batch (a JSON array): the language server protocol sends one "
                       "message per frame")
    if not isinstance(value, dict):
        return Refusal(INVALID_REQUEST, "a message is a JSON object")
    has_id = "id" in value
    msg_id = value.get("id")
    if has_id and not _valid_id(msg_id) and not (msg_id is None and "method" not in value):
        return Refusal(INVALID_REQUEST, "the id is not an integer or a string")
    if value.get("jsonrpc") != "2.0":
        return Refusal(INVALID_REQUEST, 'not a JSON-RPC 2.0 message ("jsonrpc": "2.0")', msg_id)
    method = value.get("method")
    if "method" not in value:
        if has_id and ("result" in value or "error" in value):
            return Message("response", None, msg_id, value)
        return Refusal(INVALID_REQUEST, "a message without a method", msg_id)
    if not isinstance(method, str) or not method:
        return Refusal(INVALID_REQUEST, "the method is not a string", msg_id)
    params = value.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        return Refusal(INVALID_REQUEST, "params are an object or an array", msg_id)
    return Message("request" if has_id else "notification", method, msg_id, value)


def exactly(kind: type):
    """A cattrs structure hook taking only values of `kind`: cattrs makes a str of anything
    (`"newName": null` would rename to `None`) and an int of "3", so params get their JSON types
    exactly, or -32602."""
    def structure(value, _):
        if type(value) is not kind and not (kind is float and type(value) is int):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value
    return structure


def shown_method(method: str) -> str:
    return method if len(method) <= 80 else method[:80] + "..."


class Session:
    """The lifecycle (initialize, shutdown, exit) and which methods the server knows: whether a
    message may go on to its handler, or the refusal it gets. `requests` and `notifications`
    are the methods the server handles (lsprotocol's catalogue says which kind each is)."""

    def __init__(self, requests: frozenset, notifications: frozenset, known_requests: frozenset) -> None:
        self.requests, self.notifications, self.known_requests = requests, notifications, known_requests
        self.initialized = False
        self.shut_down = False
        self.exit_code: Optional[int] = None

    def admit(self, message: Message) -> Optional[Refusal]:
        """None when `message` goes on to its handler; a Refusal answered to a request (a refused
        notification is only logged, a response ignored)."""
        method = message.method
        if message.kind == "response":
            return Refusal(INVALID_REQUEST, "a response to a request the server did not send")
        if method == "exit":
            if message.kind == "request":
                return Refusal(INVALID_REQUEST, "exit is a notification: send it without an id", message.id)
            self.exit_code = 0 if self.shut_down else 1
            return None
        if self.shut_down:
            return Refusal(INVALID_REQUEST, "the server is shut down: only exit may follow shutdown", message.id)
        if not self.initialized and method != "initialize":
            return Refusal(SERVER_NOT_INITIALIZED, "the server is not initialized: send initialize first", message.id)
        if self.initialized and method == "initialize":
            return Refusal(INVALID_REQUEST, "initialize was sent already", message.id)
        if message.kind == "request":
            if method in self.notifications:
                return Refusal(INVALID_REQUEST, f"{method} is a notification: send it without an id", message.id)
            if method not in self.requests:
                return Refusal(METHOD_NOT_FOUND, f"no method {shown_method(method)}", message.id)
        elif method not in self.notifications:
            kind = "a request: send it with an id" if method in self.known_requests else "not a notification the " \
                "server handles"
            return Refusal(METHOD_NOT_FOUND, f"{shown_method(method)} is {kind}")
        return None


class Writer:
    """Writes whole frames to a file descriptor, from any thread; once the reader is gone, it
    drops them (a broken pipe ends the session, not the server with a traceback)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.broken = False
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            view = memoryview(data)
            while view and not self.broken:
                try:
                    view = view[os.write(self.fd, view):]
                except InterruptedError:
                    continue
                except OSError:
                    self.broken = True

    def close(self) -> None:
        """pygls's writer interface; the descriptor stays open (the process ends soon after)."""

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def error(self, refusal: Refusal) -> None:
        self.send({"jsonrpc": "2.0", "id": refusal.id, "error": {"code": refusal.code, "message": refusal.message}})


async def pump(reader: FrameReader, handle: Callable[[Union[Message, Refusal]], bool], writer: "Writer") -> None:
    """Read frames on a thread of their own and hand each message (or refusal) to `handle` on the
    event loop, until the input ends or `handle` returns False. Reading waits while the loop is
    behind, so a client that writes faster than the server answers fills no queue. A bug in
    `handle` is logged in one line and answered -32603; the session goes on."""
    loop = asyncio.get_running_loop()
    items: asyncio.Queue = asyncio.Queue(maxsize=4)
    loop.set_exception_handler(_loop_error)

    def read() -> None:
        while True:
            try:
                item = reader.next()
            except OSError as error:  # an input that cannot be read ends like one that ended
                log.warning("cannot read the input: %s", error)
                item = None
            except Exception as error:  # noqa: BLE001 - a bug here: one line, and the session ends
                log.error("internal error reading the input, the session ends: %s: %s", type(error).__name__, error)
                item = None
            try:
                asyncio.run_coroutine_threadsafe(items.put(item), loop).result()
            except (RuntimeError, concurrent.futures.CancelledError):  # the loop is gone
                return
            if item is None:
                return

    threading.Thread(target=read, name="nadc-lsp-reader", daemon=True).start()
    while True:
        item = await items.get()
        if item is None:
            break
        try:
            if not handle(item):
                break
        except Exception as error:  # noqa: BLE001 - the last guard: one line, an answer, and on
            log.error("internal error: %s: %s", type(error).__name__, error)
            if isinstance(item, Message) and item.kind == "request":
                writer.error(Refusal(INTERNAL_ERROR, f"nadc: internal error: {type(error).__name__}: {error}"[:500],
                                     item.id))
    for task in asyncio.all_tasks() - {asyncio.current_task()}:  # requests still running: dropped
        task.cancel()


def _loop_error(loop, context: dict) -> None:
    """Errors in callbacks: one log line, and none for what ending a session leaves behind."""
    error = context.get("exception")
    if isinstance(error, (asyncio.CancelledError, concurrent.futures.CancelledError, BrokenPipeError)):
        return
    what = f"{type(error).__name__}: {error}" if error is not None else ""
    log.error("%s %s", context.get("message", "error"), what)


class _OneLine(logging.Formatter):
    """A record as one line, at most 500 characters: an exception as its type and message, never a
    traceback (an editor's log, and what a client reads back, must not carry one)."""

    def formatException(self, exc_info) -> str:
        return f"{exc_info[0].__name__}: {exc_info[1]}"

    def formatStack(self, stack_info) -> str:
        return ""

    def format(self, record: logging.LogRecord) -> str:
        text = " | ".join(line for line in super().format(record).splitlines() if line.strip())
        return text if len(text) <= 500 else text[:497] + "..."


def configure_logging() -> None:
    """Warnings and errors to standard error (the editor's log), one line each; NADC_DEBUG=1 keeps
    tracebacks, for finding a bug."""
    handler = logging.StreamHandler()
    if os.environ.get("NADC_DEBUG"):
        handler.setFormatter(logging.Formatter("nadc lsp: %(message)s"))
    else:
        handler.setFormatter(_OneLine("nadc lsp: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
