"""A hostile client for `nadc lsp`: messages drawn from a seeded `random.Random`, each with the
answer the protocol requires, and a driver that sends them to one server and checks every answer.

Shared by tests/test_lsp_fuzz.py (a few hundred cases in the suite) and
benchmarks/lsp_fuzz_bench.py (10,000). The classes of input: broken framing (lengths that are not
numbers, too large, too short or too long, lowercase or LF-only headers, header lines that are not
headers, bodies that are not UTF-8 JSON), envelopes that are not JSON-RPC requests (batches, ids
of the wrong type, no method), requests out of the lifecycle or for unknown methods, every method's
params missing, null, of the wrong JSON types, with negative or huge positions and ranges that end
before they start, documents the server must not read (a FIFO, /dev/zero, /dev/stdin, a folder, a
missing file, a URI that is no file), rename's new names that are not node ids, and notifications
with all of the above. Each case is followed by a sentinel request (an unknown method: -32601), so
the driver knows the server is alive and reading in step before the next case.

What the driver checks: every request with an id gets exactly one response, with an outcome the
case allows (a result, or the spec's error code for its class); a bad frame gets an error (-32700 or
-32600) with its id or null; a notification gets no answer; no answer is -32603 (an internal
error); the server never exits, and nothing it writes to stderr is a traceback.
"""
from __future__ import annotations

import collections
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from lsp_wire import Wire, frame

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR, REQUEST_FAILED = -32603, -32803
RESULT = "result"  # an answer without an error
MAX_BODY = 16 << 20

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "resnet_basic.nad"
BROKEN = EXAMPLE.read_text().replace("4:ReLU\n", "4:Relu\n", 1).replace("kernel_size=3,stride=1", "kernel_size=3,stride=2", 1)


@dataclass
class Case:
    """One hostile input and what must come back."""

    kind: str  # its class, for the report
    data: bytes  # what is written to the server
    id: Any = None  # the request's id when its answer is awaited
    want: frozenset = frozenset()  # the outcomes allowed for that answer: error codes, or RESULT
    refused: frozenset = frozenset()  # a refusal of the frame or envelope: the codes of the error that must come
    embedded: Any = None  # the id inside a bad frame, which its refusal may carry


class Documents:
    """The files the cases point at: two open documents, a regular file not open, and paths the
    server must refuse to read."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "open.nad").write_text(EXAMPLE.read_text())
        (folder / "broken.nad").write_text(BROKEN)
        (folder / "disk.nad").write_text(EXAMPLE.read_text())
        (folder / "dir.nad").mkdir(exist_ok=True)
        fifo = folder / "fifo.nad"
        if not fifo.exists():
            os.mkfifo(fifo)
        self.open = [(folder / "open.nad").as_uri(), (folder / "broken.nad").as_uri()]
        self.readable = [(folder / "disk.nad").as_uri()]
        self.refused = [fifo.as_uri(), (folder / "dir.nad").as_uri(), (folder / "missing.nad").as_uri(),
                        "file:///dev/zero", "file:///dev/stdin", "untitled:Untitled-1", "http://example.org/b.nad",
                        "file://", "", "x", "file:///%00"]
        self.scratch = (folder / "scratch.nad").as_uri()  # opened, changed and closed by notifications


#: Each request method the server handles: its required params and how to build them.
def _position(rng: random.Random) -> dict:
    return {"line": rng.choice([0, 1, 4, 7, 12, 30, 2 ** 31 - 1]), "character": rng.choice([0, 1, 3, 9, 80, 2 ** 31 - 1])}


def _range(rng: random.Random) -> dict:
    a, b = sorted([_position(rng), _position(rng)], key=lambda p: (p["line"], p["character"]))
    return {"start": a, "end": b}


def _params(method: str, uri: str, rng: random.Random) -> dict:
    doc = {"textDocument": {"uri": uri}}
    if method in ("textDocument/hover", "textDocument/completion", "textDocument/definition"):
        return {**doc, "position": _position(rng)}
    if method == "textDocument/references":
        return {**doc, "position": _position(rng), "context": {"includeDeclaration": rng.random() < 0.5}}
    if method == "textDocument/rename":
        return {**doc, "position": _position(rng), "newName": f"n_{rng.randrange(1000)}"}
    if method == "textDocument/formatting":
        return {**doc, "options": {"tabSize": 4, "insertSpaces": True}}
    if method == "textDocument/rangeFormatting":
        return {**doc, "range": _range(rng), "options": {"tabSize": 4, "insertSpaces": True}}
    if method == "textDocument/codeAction":
        return {**doc, "range": _range(rng), "context": {"diagnostics": [], **(
            {"only": [rng.choice(["quickfix", "source.fixAll", "source"])]} if rng.random() < 0.5 else {})}}
    return doc  # documentSymbol, foldingRange


REQUESTS = ["textDocument/hover", "textDocument/completion", "textDocument/definition", "textDocument/references",
            "textDocument/rename", "textDocument/formatting", "textDocument/rangeFormatting", "textDocument/codeAction",
            "textDocument/documentSymbol", "textDocument/foldingRange"]
_WRONG = [None, True, 3, -1, 1.5, "x", [], [1], {}, {"a": 1}]
_BAD_NAMES = ["", "a b", "é", "9" * 700, "x" * 100_000, "-1", "a-b", "0" * 33, "1\n2", "a:b", "\u0663"]


class Generator:
    """Hostile cases from a seed; ids are unique within one generator."""

    def __init__(self, rng: random.Random, docs: Documents) -> None:
        self.rng, self.docs, self.k = rng, docs, 0
        self.kinds = [(self.framing, 3), (self.envelope, 2), (self.lifecycle, 1), (self.valid, 2),
                      (self.bad_params, 4), (self.refused_document, 2), (self.rename_names, 1), (self.notification, 3)]

    def next_id(self) -> Any:
        self.k += 1  # apart from the ids the driver's own requests use (lsp_wire.Wire: from 1001 on)
        return self.rng.choice([10 ** 7 + self.k, f"c{self.k}", -self.k, self.k + 2 ** 53])

    def request(self, method: str, params: Any, msg_id: Any, omit: bool = False) -> dict:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if not omit:
            message["params"] = params
        return message

    def case(self) -> Case:
        makers, weights = zip(*self.kinds)
        return self.rng.choices(makers, weights)[0]()

    # -- the classes ------------------------------------------------------------------------

    def valid(self) -> Case:
        rng, msg_id = self.rng, self.next_id()
        method = rng.choice(REQUESTS)
        uri = rng.choice(self.docs.open + self.docs.readable)
        want = {RESULT, REQUEST_FAILED} if method == "textDocument/rename" else {RESULT}
        header = rng.choice([b"Content-Length: %d\r\n\r\n", b"content-length: %d\r\n\r\n", b"Content-Length: %d\n\n",
                             b"Content-Length:%d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
                             b"X-Extra: 1\r\nCONTENT-LENGTH: %d \r\n\r\n"])
        return Case(f"valid {method}", frame(self.request(method, _params(method, uri, rng), msg_id), header), msg_id,
                    frozenset(want))

    def bad_params(self) -> Case:
        rng, msg_id = self.rng, self.next_id()
        method = rng.choice(REQUESTS)
        params = _params(method, rng.choice(self.docs.open), rng)
        how = rng.choice(["null", "empty", "list", "drop", "wrong", "position", "uri", "backwards"])
        if how == "null":
            return Case("params null", frame(self.request(method, None, msg_id, omit=rng.random() < 0.5)), msg_id,
                        frozenset({INVALID_PARAMS}))
        if how == "empty":
            params = {}
        elif how == "list":
            params = [params]
        elif how == "drop":
            del params[rng.choice(sorted(params))]
        elif how == "wrong":
            key = rng.choice(sorted(params))
            params[key] = rng.choice([w for w in _WRONG if not isinstance(w, type(params[key]))
                                      or isinstance(w, bool) != isinstance(params[key], bool)])
        elif how == "position" and "position" in params:
            params["position"][rng.choice(["line", "character"])] = rng.choice(
                [-1, 2 ** 31, 10 ** 30, "3", 1.5, None, True, [0]])
        elif how == "uri":
            params["textDocument"]["uri"] = rng.choice([None, 5, ["file:///a.nad"], {"uri": "x"}])
        elif how == "backwards" and "range" in params:
            params["range"] = {"start": {"line": 9, "character": 0}, "end": {"line": 2, "character": 0}}
        else:
            params = {"textDocument": "file:///a.nad"}
        return Case(f"params {how} {method}", frame(self.request(method, params, msg_id)), msg_id,
                    frozenset({INVALID_PARAMS}))

    def refused_document(self) -> Case:
        rng, msg_id = self.rng, self.next_id()
        method = rng.choice(REQUESTS)
        uri = rng.choice(self.docs.refused)
        return Case(f"document {uri[-12:]!r}", frame(self.request(method, _params(method, uri, rng), msg_id)), msg_id,
                    frozenset({REQUEST_FAILED}))

    def rename_names(self) -> Case:
        rng, msg_id = self.rng, self.next_id()
        params = _params("textDocument/rename", rng.choice(self.docs.open), rng)
        params["newName"] = rng.choice(_BAD_NAMES)
        return Case("rename to a name that is no id", frame(self.request("textDocument/rename", params, msg_id)),
                    msg_id, frozenset({REQUEST_FAILED}))

    def lifecycle(self) -> Case:
        rng, msg_id = self.rng, self.next_id()
        how = rng.choice(["initialize", "unknown", "notification with id", "exit with id"])
        if how == "initialize":
            message = self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, msg_id)
            want = INVALID_REQUEST
        elif how == "unknown":
            message = self.request(rng.choice(["workspace/symbol", "textDocument/prepareRename", "nadc/x", "$/x",
                                               "m" * 5000]), {}, msg_id)
            want = METHOD_NOT_FOUND
        elif how == "notification with id":
            message = self.request(rng.choice(["textDocument/didSave", "initialized", "$/cancelRequest"]),
                                   {"textDocument": {"uri": self.docs.scratch}}, msg_id)
            want = INVALID_REQUEST
        else:
            message = self.request("exit", None, msg_id)
            want = INVALID_REQUEST
        return Case(f"lifecycle: {how}", frame(message), msg_id, frozenset({want}))

    def envelope(self) -> Case:
        rng = self.rng
        msg_id = self.next_id()
        good = self.request("textDocument/hover", _params("textDocument/hover", self.docs.open[0], rng), msg_id)
        how = rng.choice(["batch", "scalar", "id type", "jsonrpc", "no method", "method type", "params type"])
        if how == "batch":
            return Case("envelope: batch", frame(rng.choice([[], [good]])), refused=frozenset({INVALID_REQUEST}))
        if how == "scalar":
            return Case("envelope: scalar", frame(rng.choice([1, "x", None, True])), refused=frozenset({INVALID_REQUEST}))
        if how == "id type":
            good["id"] = rng.choice([1.5, True, None, [1], {"a": 1}])
            return Case("envelope: id type", frame(good), refused=frozenset({INVALID_REQUEST}))
        if how == "jsonrpc":
            good["jsonrpc"] = rng.choice(["1.0", 2, None])
            if rng.random() < 0.5:
                del good["jsonrpc"]
        elif how == "no method":
            del good["method"]
        elif how == "method type":
            good["method"] = rng.choice([5, None, "", ["textDocument/hover"]])
        else:
            good["params"] = rng.choice([5, "x", True])
        return Case(f"envelope: {how}", frame(good), msg_id, frozenset({INVALID_REQUEST}))

    def framing(self) -> Case:
        rng = self.rng
        msg_id = self.next_id()
        # an unknown method: if the frame is read after all, its answer (-32601) comes before the sentinel's
        message = json.dumps(self.request("nadc/embedded", _params("textDocument/hover", self.docs.open[0], rng),
                                          msg_id)).encode()
        n = len(message)
        how = rng.choice(["not a number", "too large", "too short", "too long", "garbage", "raw json",
                          "no length", "long line", "many headers", "not utf-8", "not json", "nan", "deep",
                          "trailing", "bom", "empty", "two lengths"])
        code, data = PARSE_ERROR, None
        if how == "not a number":
            value = rng.choice([b"abc", b"-5", b"+5", b"", b"0x10", b"5 5", b"1e3", b"\xd9\xa3", b"5.0"])
            data = b"Content-Length: " + value + b"\r\n\r\n" + message
        elif how == "too large":
            code = INVALID_REQUEST
            data = b"Content-Length: %d\r\n\r\n" % rng.choice([MAX_BODY + 1, 10 ** 12, 10 ** 30, 10 ** 300]) + message
        elif how == "too short":
            data = b"Content-Length: %d\r\n\r\n" % rng.randrange(1, n) + message
        elif how == "too long":
            data = b"Content-Length: %d\r\n\r\n" % (n + rng.randrange(1, 5000)) + message
        elif how == "garbage":
            data = bytes(rng.choice(b"0123456789 !@$%^&*()[]{};'\"<>,./?\\|\t\r\n\x00\xff") for _ in range(rng.randrange(1, 300)))
            data += b"\r\n" if not data.strip() else b""
            if not data.strip():
                data = b"???\r\n"
        elif how == "raw json":
            data = message + b"\r\n"
        elif how == "no length":
            data = b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + message
        elif how == "long line":
            data = b"X-Long: " + b"y" * rng.choice([1100, 20_000]) + b"\r\nContent-Length: %d\r\n\r\n" % n + message
        elif how == "many headers":
            data = b"".join(b"X-%d: %s\r\n" % (k, b"z" * 500) for k in range(20)) + b"Content-Length: %d\r\n\r\n" % n + message
        elif how == "not utf-8":
            data = frame(message.replace(b'"jsonrpc"', b'"json\xff\xferpc"'))
        elif how == "not json":
            data = frame(rng.choice([b"{", b"hello", b"{'a': 1}", b'{"a": }', message[:-1]]))
        elif how == "nan":
            data = frame(message[:-1] + b', "x": NaN}')
        elif how == "deep":
            data = frame(b"[" * rng.choice([2000, 100_000]))
        elif how == "trailing":
            data = frame(message + b" x")
        elif how == "bom":
            data = frame(b"\xef\xbb\xbf" + message)
        elif how == "empty":
            data = b"Content-Length: 0\r\n\r\n"
        else:
            data = b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (n, n + 1) + message
        return Case(f"framing: {how}", data, refused=frozenset({code}), embedded=msg_id)

    def notification(self) -> Case:
        rng, docs = self.rng, self.docs
        uri = rng.choice([docs.scratch, *docs.open])
        text = rng.choice([EXAMPLE.read_text(), BROKEN, "", "\x00\ufeff\r\r\n", "##B##\n" + "2:ReLU\n" * 3000,
                           "x" * 300_000, "é→\U0001d7d8\n"])
        how = rng.choice(["open", "change", "incremental", "close", "save", "cancel", "trace", "unknown",
                          "initialized", "request as notification", "response", "open bad", "change unopened"])
        note = {"jsonrpc": "2.0"}
        if how in ("open", "open bad"):
            params = {"textDocument": {"uri": uri, "languageId": "nad", "version": rng.randrange(100), "text": text}}
            if how == "open bad":
                key = rng.choice(["uri", "version", "text"])
                params["textDocument"][key] = rng.choice([w for w in _WRONG if type(w) is not type(params["textDocument"][key])])
            note.update(method="textDocument/didOpen", params=params)
        elif how in ("change", "change unopened"):
            target = uri if how == "change" else docs.folder.joinpath("never-opened.nad").as_uri()
            note.update(method="textDocument/didChange", params={"textDocument": {"uri": target, "version": rng.randrange(100)},
                                                                  "contentChanges": [{"text": text}]})
        elif how == "incremental":
            change = {"range": {"start": _position(rng), "end": _position(rng)}, "text": rng.choice(["", "x\n", text[:50]])}
            note.update(method="textDocument/didChange", params={"textDocument": {"uri": uri, "version": rng.randrange(100)},
                                                                  "contentChanges": [change]})
        elif how == "close":
            note.update(method="textDocument/didClose", params={"textDocument": {"uri": rng.choice([uri, *docs.refused])}})
        elif how == "save":
            note.update(method="textDocument/didSave", params=rng.choice([{"textDocument": {"uri": uri}}, {}, None]))
        elif how == "cancel":
            note.update(method="$/cancelRequest", params=rng.choice([{"id": rng.randrange(10 ** 6)}, {"id": None}, {}, []]))
        elif how == "trace":
            note.update(method="$/setTrace", params=rng.choice([{"value": "off"}, {"value": "loud"}, None]))
        elif how == "unknown":
            note.update(method=rng.choice(["nadc/x", "$/progress", "workspace/didChangeConfiguration"]), params={})
        elif how == "initialized":
            note.update(method="initialized", params=rng.choice([{}, None, [1]]))
        elif how == "request as notification":
            note.update(method="textDocument/hover", params=_params("textDocument/hover", uri, rng))
        else:
            note.update(id=rng.choice([1, "x", None]), result=rng.choice([None, {}, [1]]))
        return Case(f"notification: {how}", frame(note))


@dataclass
class Report:
    """What a run found: one line per problem, and counts."""

    cases: int = 0
    requests: int = 0
    problems: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)
    exit_code: Optional[int] = None
    seconds: float = 0.0

    @property
    def unanswered(self) -> int:
        return sum(1 for p in self.problems if p.startswith("unanswered"))


def _outcome(answer: dict) -> Any:
    return answer["error"]["code"] if "error" in answer else RESULT


def drive(wire: Wire, cases, report: Report, patience: float = 60.0) -> Report:
    """Send each case and a sentinel after it; check what comes back (see the module's docstring)."""
    start = time.monotonic()
    ids = []
    for case in cases:
        report.cases += 1
        n = report.cases  # the sentinel's id: unique over every run of one report
        report.kinds[case.kind.split(":")[0].split(" ")[0]] = report.kinds.get(case.kind.split(":")[0].split(" ")[0], 0) + 1
        mark = len(wire.seen)
        wire.write(case.data)
        sentinel = wire.request("nadc/sentinel", {}, msg_id=f"sentinel-{n}")
        wanted = [sentinel] + ([case.id] if case.id is not None else [])
        answers = wire.responses(wanted, patience, since=mark)  # nothing before `mark` answers what was just sent
        if sentinel not in answers or _outcome(answers[sentinel]) != METHOD_NOT_FOUND:
            report.problems.append(f"unanswered sentinel after {case.kind} (the server is deaf or gone)")
            break
        if case.id is not None:
            report.requests += 1
            ids.append(case.id)
            if case.id not in answers:
                report.problems.append(f"unanswered: {case.kind} (id {case.id!r})")
            elif _outcome(answers[case.id]) not in case.want:
                report.problems.append(f"{case.kind}: got {answers[case.id]} instead of {sorted(map(str, case.want))}")
        since = [m for m in wire.seen[mark:] if "method" not in m and m.get("id") not in wanted]
        if case.refused:
            mine = [m for m in since if m.get("id") in (None, case.embedded) and "error" in m]
            if not mine or _outcome(mine[0]) not in case.refused:
                report.problems.append(f"{case.kind}: refused without the error it needs: {since[:2]}")
            embedded = [m for m in since if m.get("id") == case.embedded]
            if len(embedded) > 1 or any(_outcome(m) not in {PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND}
                                        for m in embedded):
                report.problems.append(f"{case.kind}: its message answered {embedded}")
            if [m for m in since if m not in mine and m not in embedded]:
                report.problems.append(f"{case.kind}: unexpected answers {since[:3]}")
        elif since:
            report.problems.append(f"{case.kind}: unexpected answers {since[:2]}")
    wire.drain(0.3)
    counts = collections.Counter(m.get("id") for m in wire.seen if "method" not in m)
    report.problems.extend(f"id {msg_id!r} answered {counts[msg_id]} times" for msg_id in ids if counts[msg_id] != 1)
    internal = [m for m in wire.seen if "error" in m and m["error"].get("code") == INTERNAL_ERROR]
    report.problems.extend(f"internal error: {m}" for m in internal[:5])
    if wire.process.poll() is not None:
        report.problems.append(f"the server exited ({wire.process.returncode})")
    if b"Traceback" in wire.stderr:
        report.problems.append("a traceback on stderr: " + wire.stderr.decode(errors="replace")[-800:])
    report.seconds = time.monotonic() - start
    return report


def start(folder: Path, docs: Optional[Documents] = None) -> tuple[Wire, Documents]:
    """A server, initialized, with the two documents open."""
    docs = docs or Documents(folder)
    wire = Wire(cwd=folder)
    wire.initialize(folder)
    for uri, text in zip(docs.open, (EXAMPLE.read_text(), BROKEN)):
        wire.open(uri, text)
    return wire, docs
