"""A raw-bytes client for `nadc lsp`: what a hostile or broken client writes, byte for byte.

pytest-lsp (tests/lsp_client.py) speaks the protocol correctly; these tests need to send what no
correct client sends (bad headers, wrong lengths, broken JSON, wrong params) and to see every byte
the server writes back, stdout and stderr apart. A reader thread splits the server's stdout into
messages (it frames them strictly: anything else is recorded as `garbage`).
"""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

#: How long a test waits for an answer it expects before calling it missing. Only a bound on a
#: hang: a correct server answers in milliseconds, and tests never assert on how long it took.
PATIENCE = 60.0


def server_command() -> list[str]:
    nadc = Path(sys.executable).with_name("nadc")
    if nadc.exists():
        return [str(nadc), "lsp"]
    return [sys.executable, "-c", "from nader.compiler.cli import main; main()", "lsp"]


def frame(message: Any, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    """`message` (JSON, or bytes as they are) framed with `header`, whose `%d` is the body's length."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return header % len(body) + body


class Wire:
    """One `nadc lsp` process and what it wrote."""

    def __init__(self, cwd: Optional[Path] = None) -> None:
        self.process = subprocess.Popen(server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=cwd)
        self.messages: "queue.Queue[dict]" = queue.Queue()
        self.seen: list[dict] = []  # every message read so far, in order
        self.garbage = b""
        self.stderr = b""
        self.next_id = 1000
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- reading ----------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        out = self.process.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.partition(b":")
                if name == b"Content-Length" and value.strip().isdigit():
                    length = int(value)
                elif name != b"Content-Type":
                    self.garbage += line
            if length is None:
                self.garbage += b"<no Content-Length>"
                continue
            body = out.read(length)
            try:
                self.messages.put(json.loads(body))
            except ValueError:
                self.garbage += body

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr += line

    def _next(self, deadline: float) -> Optional[dict]:
        try:
            message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        self.seen.append(message)
        return message

    def responses(self, ids, patience: float = PATIENCE, since: int = 0) -> dict:
        """The responses to every id in `ids` (a missing one: absent), reading until all came; those
        read before are looked for from `seen[since]` on."""
        wanted, found = set(ids), {}
        for m in self.seen[since:]:
            if "method" not in m and m.get("id") in wanted:
                found.setdefault(m["id"], m)
        deadline = time.monotonic() + patience
        while set(found) != wanted:
            m = self._next(deadline)
            if m is None:
                break
            if "method" not in m and m.get("id") in wanted:
                found.setdefault(m["id"], m)
        return found

    def response(self, msg_id, patience: float = PATIENCE) -> Optional[dict]:
        return self.responses([msg_id], patience).get(msg_id)

    def notification(self, method: str, test=lambda params: True, patience: float = PATIENCE) -> Optional[dict]:
        """The first notification of `method` (not seen before) whose params pass `test`."""
        deadline = time.monotonic() + patience
        while True:
            m = self._next(deadline)
            if m is None:
                return None
            if m.get("method") == method and "id" not in m and test(m.get("params")):
                return m

    def drain(self, patience: float = 0.2) -> None:
        deadline = time.monotonic() + patience
        while self._next(deadline) is not None:
            pass

    def answers_to(self, msg_id) -> list[dict]:
        """Every response seen with this id (a correct server sends exactly one)."""
        return [m for m in self.seen if "method" not in m and m.get("id") == msg_id]

    # -- writing ----------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(frame(message))

    def request(self, method: str, params: Any = None, *, msg_id=None, omit_params: bool = False) -> Any:
        """Send a request; returns its id."""
        if msg_id is None:
            self.next_id += 1
            msg_id = self.next_id
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if not omit_params:
            message["params"] = params
        self.send(message)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, method: str, params: Any = None, patience: float = PATIENCE) -> Optional[dict]:
        return self.response(self.request(method, params), patience)

    def initialize(self, root: Optional[Path] = None) -> dict:
        answer = self.call("initialize", {"processId": None, "rootUri": root.as_uri() if root else None,
                                          "capabilities": {}})
        self.notify("initialized", {})
        return answer

    def open(self, uri: str, text: str, version: int = 1) -> dict:
        """Open a document and return its published diagnostics' params."""
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "nad", "version": version,
                                                              "text": text}})
        found = self.notification("textDocument/publishDiagnostics",
                                  lambda p: p["uri"] == uri and p.get("version") == version)
        return found["params"] if found else None

    def alive(self) -> bool:
        """Whether the server still answers: a request for a method no server has gets -32601."""
        answer = self.call("nadc/no-such-method", {})
        return answer is not None and answer.get("error", {}).get("code") == -32601

    def close(self, timeout: float = 30.0) -> Optional[int]:
        """Close stdin and wait for the process; its exit code (None if it had to be killed)."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None
        finally:
            time.sleep(0.05)  # let the reader threads take the last bytes

    def stop(self) -> Optional[int]:
        """The spec's end: shutdown, then exit; the exit code."""
        self.call("shutdown")
        self.notify("exit")
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            return self.close()
