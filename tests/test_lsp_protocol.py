"""`nadc lsp` and the protocol's rules, byte for byte (issue 41, findings 5-9): what a broken or
hostile client sends is answered with the spec's error codes and the server keeps reading.

* huge lengths are refused unread (-32600), not allocated (finding 5);
* params that do not fit their method get -32602 (finding 6);
* after a bad frame (a length too short, too long, negative, not a number) the next request is
  answered, and lowercase or LF-only headers are read (finding 7);
* documents not open are read only as regular files of bounded size (finding 8);
* the lifecycle's codes (-32002 before initialize, -32600 after shutdown, exit's status), rename's
  refusals as -32803 without a traceback, and no traceback on stderr when the input ends while an
  analysis runs (finding 9).

tests/test_lsp_fuzz.py sends a few hundred random cases of the same classes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("pygls", reason="the `lsp` extra (pygls) is not installed")

from conftest import REPO_ROOT  # noqa: E402
from lsp_hostile import BROKEN, EXAMPLE  # noqa: E402
from lsp_wire import Wire, frame  # noqa: E402

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
NOT_INITIALIZED, REQUEST_FAILED = -32002, -32803


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lsp")
    server = Wire(cwd=folder)
    server.folder = folder
    server.initialize(folder)
    server.uri = (folder / "block.nad").as_uri()
    server.open(server.uri, EXAMPLE.read_text())
    yield server
    server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode()[-2000:]


def code(answer) -> int:
    assert answer is not None, "no answer"
    assert "error" in answer, answer
    assert "data" not in answer["error"], answer  # no traceback rides along
    return answer["error"]["code"]


def hover(uri: str, line: int = 4, character: int = 0) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def test_finding_5_a_huge_content_length_is_refused_and_the_server_goes_on(wire):
    for length in (10 ** 30, 10 ** 12, (16 << 20) + 1):
        wire.write(b"Content-Length: %d\r\n\r\n{}" % length)
        answer = wire.call("textDocument/hover", hover(wire.uri))
        assert answer is not None and "result" in answer, answer
    refusals = [m for m in wire.seen if m.get("id") is None and "error" in m]
    assert [code(m) for m in refusals[-3:]] == [INVALID_REQUEST] * 3
    assert "over the limit" in refusals[-1]["error"]["message"]
    assert wire.process.poll() is None


def test_finding_6_params_that_do_not_fit_get_invalid_params(wire):
    ids = [wire.request("textDocument/hover", hover(wire.uri, line=-1)),
           wire.request("textDocument/hover", {}),
           wire.request("textDocument/hover", None),
           wire.request("textDocument/hover", None, omit_params=True),
           wire.request("textDocument/rename", hover(wire.uri)),  # no newName
           wire.request("textDocument/rename", {**hover(wire.uri), "newName": None}),  # cattrs would say "None"
           wire.request("textDocument/completion", hover(wire.uri, line="4")),
           wire.request("textDocument/rangeFormatting", {"textDocument": {"uri": wire.uri}, "options": {
               "tabSize": 4, "insertSpaces": True}, "range": {"start": {"line": 9, "character": 0},
                                                              "end": {"line": 2, "character": 0}}})]
    answers = wire.responses(ids)
    assert [code(answers.get(i)) for i in ids] == [INVALID_PARAMS] * len(ids)
    assert "newName" in answers[ids[4]]["error"]["message"]  # says what does not fit, in the protocol's names


@pytest.mark.parametrize("header", [b"Content-Length: %d\r\n\r\n", b"content-length: %d\r\n\r\n",
                                    b"Content-Length: %d\n\n", b"CONTENT-LENGTH:%d\r\n\r\n"])
def test_finding_7_lowercase_and_lf_only_headers_are_read(wire, header):
    message = {"jsonrpc": "2.0", "id": "header " + header.decode(), "method": "textDocument/hover",
               "params": hover(wire.uri)}
    wire.write(frame(message, header))
    answer = wire.response(message["id"])
    assert answer is not None and "result" in answer, answer


@pytest.mark.parametrize("how", ["too short", "too long", "negative", "not a number", "no length", "garbage"])
def test_finding_7_after_a_bad_frame_the_next_request_is_answered(wire, how):
    message = json.dumps({"jsonrpc": "2.0", "id": f"bad-{how}", "method": "textDocument/hover",
                          "params": hover(wire.uri)}).encode()
    header = {"too short": b"Content-Length: %d\r\n\r\n" % (len(message) - 7),
              "too long": b"Content-Length: %d\r\n\r\n" % (len(message) + 40),
              "negative": b"Content-Length: -%d\r\n\r\n" % len(message),
              "not a number": b"Content-Length: forty\r\n\r\n", "no length": b"Content-Type: x\r\n\r\n",
              "garbage": b"}}} ?? \r\n"}[how]
    wire.write(header + message)
    answer = wire.call("textDocument/hover", hover(wire.uri))
    assert answer is not None and "result" in answer, f"deaf after a frame {how}"
    refusal = [m for m in wire.seen if m.get("id") in (None, f"bad-{how}") and "error" in m][-1]
    assert code(refusal) == PARSE_ERROR
    assert len(wire.answers_to(f"bad-{how}")) <= 1


def test_finding_8_documents_not_open_are_read_only_as_bounded_regular_files(wire):
    folder = wire.folder
    fifo = folder / "fifo.nad"
    os.mkfifo(fifo)
    (folder / "big.nad").write_text("# padding\n" * 120_000)  # 1.2 MB: past text-bytes (1 MiB)
    (folder / "disk.nad").write_text(BROKEN)
    refused = [fifo.as_uri(), "file:///dev/stdin", "file:///dev/zero", folder.as_uri(), (folder / "big.nad").as_uri(),
               (folder / "missing.nad").as_uri(), "untitled:Untitled-1"]
    ids = [wire.request("textDocument/hover", hover(uri)) for uri in refused]
    readable = wire.request("textDocument/documentSymbol", {"textDocument": {"uri": (folder / "disk.nad").as_uri()}})
    answers = wire.responses(ids + [readable])
    assert [code(answers.get(i)) for i in ids] == [REQUEST_FAILED] * len(ids)
    messages = [answers[i]["error"]["message"] for i in ids]
    assert "FIFO" in messages[0] and "character device" in messages[2] and "directory" in messages[3]
    assert "more than the limit" in messages[4] and "No such file" in messages[5] and "not open" in messages[6]
    assert [s["name"] for s in answers[readable]["result"]][:1] == ["ResNetBasic"]  # a regular file still is read


def test_finding_9_rename_refusals_are_request_failed_with_the_reason(wire):
    lines = EXAMPLE.read_text().split("\n")
    node = lines.index("2:Conv2d(out_channels=C,kernel_size=3,stride=1)")
    names = {"3": "has a node `3` already", "9" * 700: "more than 32 digits", "x" * 100_000: "longer than a line",
             "a b": "is not a node id", "": "is not a node id"}
    ids = {wire.request("textDocument/rename", {**hover(wire.uri, node), "newName": name}): why
           for name, why in names.items()}
    nowhere = wire.request("textDocument/rename", {**hover(wire.uri, 0), "newName": "x"})
    answers = wire.responses([*ids, nowhere])
    for msg_id, why in ids.items():
        assert code(answers[msg_id]) == REQUEST_FAILED and why in answers[msg_id]["error"]["message"]
        assert len(answers[msg_id]["error"]["message"]) < 200
    assert code(answers[nowhere]) == REQUEST_FAILED and "no node id here" in answers[nowhere]["error"]["message"]
    ok = wire.call("textDocument/rename", {**hover(wire.uri, node), "newName": "conv_a"})
    assert len(ok["result"]["changes"][wire.uri]) == 3


def test_the_open_documents_hold_a_bounded_amount_of_text(wire):
    """Past 64 Mi characters in all, the document that grew is dropped as if closed, and the editor told."""
    from nader.compiler.commands.lsp_server import MAX_OPEN_TEXT
    assert f"at most {MAX_OPEN_TEXT >> 20} Mi characters together" in (REPO_ROOT / "docs" / "editors.md").read_text()
    text = "#" * (13 << 20)  # 13 Mi characters, a frame under the 16 MiB limit
    uris = [(wire.folder / f"huge{k}.nad").as_uri() for k in range(5)]
    for uri in uris:
        wire.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "nad", "version": 1,
                                                              "text": text}})
    told = wire.notification("window/showMessage", lambda p: "not analysed" in p["message"])
    assert told is not None and uris[-1] in told["params"]["message"]
    assert code(wire.call("textDocument/hover", hover(uris[-1]))) == REQUEST_FAILED  # no longer open: not on disk
    for uri in uris:
        wire.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert wire.alive()


def test_finding_9_the_lifecycle_s_codes_and_exit_status(tmp_path):
    server = Wire(cwd=tmp_path)
    try:
        uri = (tmp_path / "a.nad").as_uri()
        assert code(server.call("textDocument/hover", hover(uri))) == NOT_INITIALIZED
        assert code(server.call("initialize", {"processId": None, "capabilities": 5})) == INVALID_PARAMS
        assert code(server.call("textDocument/hover", hover(uri))) == NOT_INITIALIZED  # that one did not count
        answer = server.call("initialize", {"processId": None, "rootUri": "file://%%%/x", "capabilities": {
            "general": {"positionEncodings": ["utf-32", "bogus"]}}, "initializationOptions": {"explainUrl": 5}})
        assert answer["result"]["capabilities"]["positionEncoding"] == "utf-32"
        server.notify("initialized", {})
        assert code(server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})) == INVALID_REQUEST
        assert server.call("shutdown") == {"jsonrpc": "2.0", "id": server.next_id, "result": None}
        assert code(server.call("textDocument/hover", hover(uri))) == INVALID_REQUEST
        assert code(server.call("shutdown")) == INVALID_REQUEST
        server.notify("exit")
        assert server.process.wait(timeout=30) == 0
    finally:
        server.close()
    assert server.stderr.count(b"\n") <= 6 and b"Traceback" not in server.stderr


def test_finding_9_exit_without_shutdown_is_status_1(tmp_path):
    server = Wire(cwd=tmp_path)
    try:
        server.initialize(tmp_path)
        server.notify("exit")
        assert server.process.wait(timeout=30) == 1
    finally:
        server.close()


def test_finding_9_no_traceback_when_the_input_ends_during_an_analysis(tmp_path):
    heavy = "##B##\n0:input\n1:output\n" + "".join(
        f"{k}:Conv2d(out_channels=C,kernel_size=3)\n{k - 1 if k > 2 else 0}->{k}\n" for k in range(2, 1500)) + "1499->1\n"
    server = Wire(cwd=tmp_path)
    try:
        server.initialize(tmp_path)
        uri = (tmp_path / "heavy.nad").as_uri()
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "nad", "version": 1,
                                                                "text": heavy}})
        server.request("textDocument/hover", hover(uri))
        server.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}},
            "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    finally:
        status = server.close()  # at once: the analysis of the open is running, or about to
    assert b"Traceback" not in server.stderr and b"Error" not in server.stderr, server.stderr.decode()[-2000:]
    assert status == 1  # the input ended without shutdown and exit


LEAK_PROBE = """
import json, os, sys, threading
from nader.compiler.commands import lsp_server
into_server, client_out = os.pipe()
server_out, from_server = os.pipe()
threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(server_out, 1 << 16), b"")], daemon=True).start()

def send(message):
    body = json.dumps(message).encode()
    os.write(client_out, b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)

def client():
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
    doc = {"uri": "file:///nowhere/a.nad", "languageId": "nad", "version": 0, "text": "##B##\\n0:input\\n1:output\\n0->1\\n"}
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": doc}})
    for version in range(1, 501):
        send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": doc["uri"],
              "version": version}, "contentChanges": [{"text": doc["text"] + "# %d\\n" % version}]}})
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    send({"jsonrpc": "2.0", "method": "exit"})

threading.Thread(target=client, daemon=True).start()
status = lsp_server.serve(into_server, from_server)
print(status, len(lsp_server.server.protocol._request_futures))
"""


def test_notifications_leave_nothing_behind(tmp_path):
    """pygls keeps each notification handler's future until a request's answer takes it out, which a
    notification never gets: 500 changes left 1,000 futures, and an editor's session grew with every
    keystroke."""
    probe = subprocess.run([sys.executable, "-c", LEAK_PROBE], capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
    status, futures = probe.stdout.split()
    assert (status, "Traceback" in probe.stderr) == ("0", False), probe.stderr[-2000:]
    assert int(futures) < 10
