"""`nadc lsp`'s frame reader (compiler/commands/lsp_transport.py), in process: valid frames read
back exactly however the bytes are split, and after any bad frame reading finds the next good one.

The properties, over streams drawn by hypothesis: good frames, then one bad frame of a given class,
then good frames, delivered in reads of arbitrary sizes. The reader never raises and always
reaches the end; every good frame after the bad one comes back, in order, exactly once; the bad one
comes back as one refusal (-32700, or -32600 for a length over the limit), carrying the message's id
when the message itself could be read. No pygls needed: this layer reads bytes only.
"""
from __future__ import annotations

import asyncio
import json
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT
from nader.compiler.commands import lsp_transport as transport
from nader.compiler.commands.lsp_transport import (INTERNAL_ERROR, INVALID_REQUEST, MAX_BODY, MAX_HEADER_LINE,
                                                   PARSE_ERROR, FrameReader, Message, Refusal, Writer, envelope, pump)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _reads(data: bytes, sizes: list[int]):
    """A `read(n)` giving `data` in pieces of the given sizes, in turn (then the end)."""
    state = {"at": 0, "k": 0}

    def read(n: int) -> bytes:
        at = state["at"]
        size = min(n, sizes[state["k"] % len(sizes)])
        state["k"] += 1
        state["at"] = at + size
        return data[at:at + size]
    return read


def read_all(data: bytes, sizes=(1 << 16,)) -> list:
    reader = FrameReader(_reads(data, list(sizes)))
    out = []
    for _ in range(len(data) + 10):  # each item consumes at least one byte: more means a loop
        item = reader.next()
        if item is None:
            return out
        out.append(item.data if isinstance(item, Message) else item)
    raise AssertionError("the reader did not reach the end of its input")


def frame(message, header=b"Content-Length: %d\r\n\r\n") -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return header % len(body) + body


def request(k: int, text: str = "") -> dict:
    return {"jsonrpc": "2.0", "id": k, "method": "textDocument/hover", "params": {"text": text}}


_TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["Content-Length: 5\\r\\n", "content-length", "}\n{", "\\u0000", "é→\U0001d7d8"])
_SIZES = st.lists(st.integers(1, 300), min_size=1, max_size=5)


def _garbage():
    # bytes that cannot spell a header name (no letters, so no `Content-Length`), and not only
    # blank lines (read past between frames)
    return st.binary(min_size=1, max_size=200).map(lambda b: bytes(c for c in b if not chr(c).isalpha())).filter(
        lambda b: b.strip())


def _bad_frames(k: int):
    """(bytes of one bad frame, the id its refusal may carry, the code) for message id `k`."""
    message = json.dumps(request(k)).encode()
    n = len(message)
    return st.one_of(
        _garbage().map(lambda g: (g + b"\r\n", None, PARSE_ERROR)),
        _garbage().map(lambda g: (g, None, PARSE_ERROR)),  # no line end: it runs into the next header
        st.sampled_from([b"abc", b"-5", b"+5", b" ", b"0x10", b"5 5", b"\xd9\xa3", b"5.0", b"1e3"]).map(
            lambda v: (b"Content-Length: " + v + b"\r\n\r\n" + message, None, PARSE_ERROR)),
        st.sampled_from([MAX_BODY + 1, 10 ** 12, 10 ** 30]).map(
            lambda v: (b"Content-Length: %d\r\n\r\n" % v + message, None, INVALID_REQUEST)),
        st.integers(1, n - 1).map(lambda short: (b"Content-Length: %d\r\n\r\n" % short + message, k, PARSE_ERROR)),
        st.integers(1, 200).map(lambda extra: (b"Content-Length: %d\r\n\r\n" % (n + extra) + message, k, PARSE_ERROR)),
        st.just((b"X-Other: 1\r\n\r\n" + message, None, PARSE_ERROR)),  # no Content-Length
        st.just((b"Content-Length: 3\r\nContent-Length: 4\r\n\r\n" + message, None, PARSE_ERROR)),
        st.just((b"Content-Length " + b"9" * (MAX_HEADER_LINE + 10) + b"\r\n\r\n" + message, None, PARSE_ERROR)),
        st.just(((b"X: " + b"y" * 900 + b"\r\n") * 10 + b"Content-Length: %d\r\n\r\n" % n + message, None,
                 PARSE_ERROR)),  # more header bytes than allowed
        st.just((frame(b"\xff\xfe" + message), None, PARSE_ERROR)),
        st.just((frame(message[:-1] + b"NaN}"), None, PARSE_ERROR)),
        st.just((frame(b"[" * 100_000), None, PARSE_ERROR)),
        st.just((frame(b'{"jsonrpc": "2.0", "id": %d, "method": "x"} trailing' % k), k, PARSE_ERROR)),
        st.just((frame(b"\xef\xbb\xbf" + message), None, PARSE_ERROR)),  # a byte-order mark is not JSON
    )


@SETTINGS
@given(st.data(), _TEXT, _SIZES, st.integers(0, 2), st.integers(1, 3))
def test_after_any_bad_frame_the_next_good_ones_are_read(data, text, sizes, before, after):
    bad, _, code = data.draw(_bad_frames(1000))
    good_before = [request(k, text) for k in range(before)]
    good_after = [request(k, text) for k in range(100, 100 + after)]
    stream = b"".join(frame(m) for m in good_before) + bad + b"".join(frame(m) for m in good_after)
    items = read_all(stream, sizes)
    refusals = [i for i in items if isinstance(i, Refusal)]
    messages = [i for i in items if not isinstance(i, Refusal)]
    assert [m for m in messages if m["id"] != 1000] == good_before + good_after  # all, in order, once
    # the bad message itself: at most one answer (a refusal with its id, or the message when a frame
    # inside its headers could be read after all), else a refusal without id
    assert sum(m["id"] == 1000 for m in messages) + sum(r.id == 1000 for r in refusals) <= 1
    assert refusals and refusals[0].code == code
    assert {r.code for r in refusals} <= {PARSE_ERROR, INVALID_REQUEST} and {r.id for r in refusals} <= {None, 1000}


def test_a_wrong_length_is_answered_with_the_message_s_id():
    """When what arrived together shows the message, its refusal carries its id: the client's request
    is answered, not left waiting."""
    message = json.dumps(request(7)).encode()
    after = frame(request(8))
    for length in (len(message) - 5, len(message) + 3, len(message) + 60):
        items = read_all(b"Content-Length: %d\r\n\r\n" % length + message + after)
        assert [(type(i).__name__, getattr(i, "id", None) or i.get("id")) for i in items] == \
            [("Refusal", 7), ("dict", 8)], length
        assert "Content-Length" in items[0].message


@SETTINGS
@given(st.lists(_TEXT, min_size=1, max_size=6), _SIZES, st.sampled_from([
    b"Content-Length: %d\r\n\r\n", b"content-length: %d\r\n\r\n", b"Content-Length: %d\n\n",
    b"CONTENT-LENGTH:%d\r\n\r\n", b"Content-Length: %d  \r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
    b"Content-Type: x\r\ncontent-Length:\t%d\r\n\r\n", b"\r\nContent-Length: %d\r\n\r\n",
    b"Content-Length: 000000000000000000000000%d\r\n\r\n"]))
def test_good_frames_come_back_exactly_however_split(texts, sizes, header):
    messages = [request(k, t) for k, t in enumerate(texts)]
    assert read_all(b"".join(frame(m, header) for m in messages), sizes) == messages


def test_a_length_over_the_limit_is_refused_unread():
    reads = []

    def read(n):
        reads.append(n)
        return b"Content-Length: 1000000000000000000000000000000\r\n\r\n{}" if len(reads) == 1 else b""

    reader = FrameReader(read)
    refusal = reader.next()
    assert isinstance(refusal, Refusal) and refusal.code == INVALID_REQUEST
    assert "over the limit" in refusal.message and reader.next() is None
    assert max(reads) <= 1 << 16  # read in chunks, never the length it was told


def test_a_message_split_by_its_own_text_is_not_mistaken_for_two():
    """A document holding `Content-Length: 5` (escaped line ends, as JSON writes them) is one message."""
    message = request(1, "Content-Length: 5\r\n\r\n{}")
    assert read_all(frame(message), [7]) == [message]


def test_the_envelope_refusals():
    cases = {
        b"[]": "a batch", b"1": "a JSON object", b"null": "a JSON object", b'{"jsonrpc": "2.0", "id": 1.5, "method": "m"}': "integer or a string",
        b'{"jsonrpc": "2.0", "id": true, "method": "m"}': "integer or a string",
        b'{"jsonrpc": "1.0", "id": 3, "method": "m"}': "JSON-RPC 2.0", b'{"jsonrpc": "2.0", "id": 3}': "without a method",
        b'{"jsonrpc": "2.0", "id": 3, "method": 7}': "not a string",
        b'{"jsonrpc": "2.0", "id": 3, "method": "m", "params": "x"}': "object or an array",
    }
    for body, why in cases.items():
        refused = envelope(json.loads(body))
        assert read_all(frame(body)) == [refused]  # `null` too: a message, not the end of the input
        assert isinstance(refused, Refusal) and refused.code == INVALID_REQUEST and why in refused.message, body
        assert refused.id == (3 if b'"id": 3' in body else None)
    ok = envelope({"jsonrpc": "2.0", "id": "a", "method": "m", "params": None})
    assert isinstance(ok, Message) and ok.kind == "request"
    assert envelope({"jsonrpc": "2.0", "id": None, "error": {}}).kind == "response"


def test_the_editors_page_states_the_limits_and_codes_the_transport_has():
    page = (REPO_ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    assert f"at most {MAX_BODY:,} bytes" in page
    assert f"at most {MAX_HEADER_LINE:,} bytes a line and {transport.MAX_HEADER_BYTES:,} bytes of headers" in page
    documented = {int(code) for code in re.findall(r"^\| (-32\d{3}) ", page, re.M)}
    defined = {value for name, value in vars(transport).items() if name.isupper() and isinstance(value, int)
               and -32899 <= value <= -32000}
    assert defined <= documented, defined - documented


class _Items:
    """A reader that gives `items`, then raises `error` (or ends)."""

    def __init__(self, items, error=None):
        self.items, self.error = list(items), error

    def next(self):
        if self.items:
            return self.items.pop(0)
        if self.error:
            raise self.error
        return None


def _pumped(reader, handle) -> list:
    """Run `pump` over `reader`; the messages it wrote (to a pipe), parsed."""
    out, into = os.pipe()
    try:
        asyncio.run(asyncio.wait_for(pump(reader, handle, Writer(into)), 60))  # a hang fails, not waits
        os.close(into)
        written = b""
        while chunk := os.read(out, 1 << 16):
            written += chunk
    finally:
        os.close(out)
    return read_all(written)


def test_a_bug_in_handling_is_answered_and_the_session_goes_on(caplog):
    request = envelope({"jsonrpc": "2.0", "id": 5, "method": "m"})
    seen = []

    def handle(item):
        seen.append(item)
        if len(seen) == 1:
            raise KeyError("boom")
        return True

    written = _pumped(_Items([request, request]), handle)
    assert len(seen) == 2  # the second message was still handled
    assert written == [{"jsonrpc": "2.0", "id": 5, "error": {"code": INTERNAL_ERROR,
                                                             "message": "nadc: internal error: KeyError: 'boom'"}}]
    assert "internal error: KeyError" in caplog.text and "Traceback" not in caplog.text


def test_a_bug_in_reading_ends_the_session_with_one_line(caplog):
    seen = []
    assert _pumped(_Items([], ValueError("boom")), lambda item: seen.append(item) or True) == []
    assert seen == [] and "internal error reading the input, the session ends: ValueError: boom" in caplog.text
