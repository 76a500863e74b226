"""A loopback test double of an OpenAI-compatible server (tests only; never part of the product).

`LoopbackServer` listens on 127.0.0.1 on a free port and speaks `POST /v1/chat/completions`,
`POST /v1/embeddings` and `GET /v1/models` (the list `models`; None: 404; `models_status`: that
HTTP error instead). Replies name the requested model, or `answer_as` where set. Each request takes
the next scripted action of its endpoint; when the script is used up, `responder(body)` (chat) or deterministic vectors (embeddings) answer.
Actions inject failures: an HTTP status (429 with Retry-After, 500...), a slow reply, a hung
connection (no reply until the server closes), a reply trickled a byte at a time, a malformed
JSON body, a body cut short, and a completion truncated at the token limit. Every request body
is kept in `requests`. `usage` says what a chat reply's usage counts when no action sets it:
`full` (every message), `no_system` (a server whose chat template drops the system message) or
`none` (no usage reported). A chat request asking `stream` is answered as server-sent events.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional


@dataclass
class Action:
    kind: str                       # reply | status | hang | trickle | malformed | cut
    text: str = ""
    finish_reason: str = "stop"
    status: int = 200
    retry_after: Optional[float] = None
    delay: float = 0.0              # seconds to wait before acting
    usage: Optional[tuple[int, int]] = None
    vectors: Optional[list] = None


def reply(text: str, *, finish_reason: str = "stop", delay: float = 0.0, usage=None) -> Action:
    return Action("reply", text=text, finish_reason=finish_reason, delay=delay, usage=usage)


def truncated(text: str) -> Action:
    return reply(text, finish_reason="length")


def status(code: int, *, retry_after: Optional[float] = None, delay: float = 0.0) -> Action:
    return Action("status", status=code, retry_after=retry_after, delay=delay)


def slow(seconds: float, text: str = "slow") -> Action:
    return reply(text, delay=seconds)


def hang() -> Action:
    return Action("hang")


def trickle(every: float, text: str = "ok") -> Action:
    """A whole, valid reply sent one byte every `every` seconds (headers first)."""
    return Action("trickle", text=text, delay=every)


def malformed() -> Action:
    return Action("malformed")


def cut() -> Action:
    return Action("cut")


def vectors(values: list) -> Action:
    return Action("reply", vectors=values)


def fake_vector(text: str, dim: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 for b in digest[:dim]]


@dataclass
class LoopbackServer:
    responder: Callable[[dict], Action] = field(default=lambda body: reply("ok"))
    chat_script: list = field(default_factory=list)
    embed_script: list = field(default_factory=list)
    requests: list = field(default_factory=list)      # (path, body) of every request
    dim: int = 8
    usage: str = "full"             # full | no_system | none
    models: Optional[list] = field(default_factory=lambda: [{"id": "local-model", "object": "model"}])
    models_status: Optional[int] = None
    answer_as: Optional[str] = None  # the model name replies carry (None: the one asked)

    def __post_init__(self):
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0          # the most requests the server held at once
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                with server._lock:
                    server.requests.append((self.path, None))
                if self.path.endswith("/models") and server.models_status is not None:
                    return _send(self, server.models_status, json.dumps({"error": {"message": "scripted"}}).encode())
                if self.path.endswith("/models") and server.models is not None:
                    return _send(self, 200, json.dumps({"object": "list", "data": server.models}).encode())
                _send(self, 404, json.dumps({"error": {"message": "not found"}}).encode())

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append((self.path, body))
                    script = server.embed_script if self.path.endswith("/embeddings") else server.chat_script
                    action = script.pop(0) if script else None
                if action is None:
                    action = (vectors([fake_vector(t, server.dim) for t in _inputs(body)])
                              if self.path.endswith("/embeddings") else server.responder(body))
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    server._act(self, action, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def model_listings(self) -> int:
        """How many times GET /models was asked."""
        return sum(1 for p, b in self.requests if b is None and p.endswith("/models"))

    @property
    def calls(self) -> list:
        """The requests that are LLM calls (everything but GET /models)."""
        return [(p, b) for p, b in self.requests if b is not None]

    @property
    def chat_requests(self) -> list[dict]:
        return [b for p, b in self.requests if p.endswith("/chat/completions")]

    # -------------------------------------------------------------- acting
    def _act(self, handler, action: Action, body: dict) -> None:
        if action.kind == "trickle":
            return self._trickle(handler, action, body)
        if action.delay and self._release.wait(action.delay):
            return  # the server is closing
        if action.kind == "hang":
            self._release.wait()
            handler.close_connection = True
            return
        if action.kind == "status":
            payload = json.dumps({"error": {"message": f"scripted {action.status}", "type": "test"}}).encode()
            headers = {"Retry-After": str(action.retry_after)} if action.retry_after is not None else {}
            return _send(handler, action.status, payload, headers)
        if action.kind == "malformed":
            return _send(handler, 200, b'{"id": "chatcmpl-1", "choices": [{"message": ')
        if action.kind == "cut":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", "4000")
            handler.end_headers()
            handler.wfile.write(b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [')
            handler.wfile.flush()
            handler.close_connection = True
            return
        if action.vectors is not None:
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(action.vectors)]
            tokens = sum(len(t.split()) for t in _inputs(body))
            payload = {"object": "list", "data": data, "model": self.answer_as or body.get("model"),
                       "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
            return _send(handler, 200, json.dumps(payload).encode())
        if body.get("stream"):
            return _send(handler, 200, self._events(action, body), {"Content-Type": "text/event-stream"})
        _send(handler, 200, self._completion(action, body))

    def _trickle(self, handler, action: Action, body: dict) -> None:
        payload = self._completion(action, body)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            for i in range(len(payload)):
                if self._release.wait(action.delay):
                    return
                handler.wfile.write(payload[i:i + 1])
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up
        handler.close_connection = True

    def _completion(self, action: Action, body: dict) -> bytes:
        counted = [m for m in body.get("messages", []) if self.usage != "no_system" or m.get("role") != "system"]
        prompt_tokens, completion_tokens = action.usage or (
            sum(len(str(m.get("content", ""))) // 4 + 1 for m in counted), len(action.text) // 4 + 1)
        payload = {
            "id": "chatcmpl-loopback", "object": "chat.completion", "created": int(time.time()),
            "model": self.answer_as or body.get("model"),
            "choices": [{"index": 0, "finish_reason": action.finish_reason,
                         "message": {"role": "assistant", "content": action.text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }
        if self.usage == "none":
            del payload["usage"]
        return json.dumps(payload).encode()


    def _events(self, action: Action, body: dict) -> bytes:
        """The completion as server-sent events: a chunk a word, then usage if asked and kept."""
        whole = json.loads(self._completion(action, body))
        base = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"],
                "model": whole["model"]}
        words = action.text.split(" ")
        chunks = [{**base, "choices": [{"index": 0, "delta": {"content": (" " if i else "") + w},
                                        "finish_reason": None}]} for i, w in enumerate(words)]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": action.finish_reason}]})
        if "usage" in whole and (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": whole["usage"]})
        return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def _inputs(body: dict) -> list[str]:
    value = body.get("input", [])
    return [value] if isinstance(value, str) else list(value)


def _send(handler, code: int, payload: bytes, headers: Optional[dict] = None) -> None:
    try:
        handler.send_response(code)
        headers = {"Content-Type": "application/json", **(headers or {})}
        handler.send_header("Content-Length", str(len(payload)))
        for k, v in headers.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up (a timeout test)
