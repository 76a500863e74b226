"""One HTTP attempt against an OpenAI-compatible endpoint, through the `openai` package.

The package's own retries are off (the client retries with its own back-off, deadline and
breaker) and its errors are sorted into two kinds: `Transient` (429, 408, 409, 5xx, timeouts,
connection failures, a reply that is not a well-formed completion) and `RequestRejected` (any
other 4xx: the request or the key is wrong). `openai` is imported on first use: it takes
seconds to import, and replay needs no endpoint.
"""
from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass
from typing import Optional

from .errors import RequestRejected

RETRYABLE_STATUS = {408, 409, 429}
NO_KEY = "no-key"  # sent when none is configured: local servers (vLLM, Ollama, llama.cpp) ignore it


class Transient(Exception):
    """A failure worth retrying; `retry_after` is the server's hint in seconds, if any."""

    def __init__(self, message: str, retry_after: Optional[float] = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RawReply:
    text: str
    finish_reason: Optional[str]
    prompt_tokens: Optional[int]
    completion_tokens: Optional[int]
    model: Optional[str] = None     # the name the server answered under, where it says


def _retry_after(exc) -> Optional[float]:
    try:
        value = exc.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _name(value) -> Optional[str]:
    return value[:200] if isinstance(value, str) and value else None  # a server's text: bounded


def _brief(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


class OpenAITransport:
    """Calls one base URL; keeps one `AsyncOpenAI` per event loop (their connection pools are per loop)."""

    def __init__(self, base_url: str, api_key: Optional[str]):
        self.base_url = base_url
        self.api_key = api_key or NO_KEY
        self._clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, object]" = weakref.WeakKeyDictionary()

    def _client(self):
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            from openai import AsyncOpenAI

            client = AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0)
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    async def chat(self, model: str, messages: list[dict], params: dict, timeout: float) -> RawReply:
        client = self._client()  # outside the timed attempt: the first one imports openai (seconds)

        async def create():
            return await client.chat.completions.create(model=model, messages=messages, timeout=timeout, **params)
        reply = await self._attempt(create, timeout)
        choices = getattr(reply, "choices", None)
        if not choices:
            raise Transient(f"malformed reply: no choices in {type(reply).__name__}")
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None)
        if text is None and getattr(message, "refusal", None):
            raise RequestRejected(f"the model refused: {_brief(message.refusal)}")
        usage = getattr(reply, "usage", None)
        return RawReply(text or "", getattr(choices[0], "finish_reason", None),
                        getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None),
                        _name(getattr(reply, "model", None)))

    async def get_json(self, path: str, timeout: float):
        """The parsed JSON body of a GET under the base URL (`models`: what `llm check` reads)."""
        client = self._client()

        async def fetch():
            return await client.get(path, cast_to=object, options={"timeout": timeout})
        return await self._attempt(fetch, timeout)

    async def list_models(self, timeout: float) -> list[dict]:
        """The entries of GET /models that name a model (`id`), in the server's order (what `llm
        check` reports and the client compares its model names with)."""
        body = await self.get_json("models", timeout)
        data = body.get("data") if isinstance(body, dict) else None
        data = data if isinstance(data, list) else []
        return [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)]

    async def chat_streamed(self, model: str, messages: list[dict], params: dict,
                            timeout: float) -> tuple[Optional[float], RawReply]:
        """One streamed chat completion: the seconds to its first text, and the whole reply."""
        client = self._client()
        first: list[float] = []

        async def stream():
            started = time.monotonic()
            chunks = await client.chat.completions.create(model=model, messages=messages, timeout=timeout, stream=True,
                                                          stream_options={"include_usage": True}, **params)
            parts, finish, usage = [], None, None
            async for chunk in chunks:
                for choice in getattr(chunk, "choices", None) or ():
                    text = getattr(getattr(choice, "delta", None), "content", None)
                    if text:
                        first or first.append(time.monotonic() - started)
                        parts.append(text)
                    finish = getattr(choice, "finish_reason", None) or finish
                usage = getattr(chunk, "usage", None) or usage
            return RawReply("".join(parts), finish, getattr(usage, "prompt_tokens", None),
                            getattr(usage, "completion_tokens", None))
        reply = await self._attempt(stream, timeout)
        return (first[0] if first else None), reply

    async def embed(self, model: str, texts: list[str],
                    timeout: float) -> tuple[list[list[float]], Optional[int], Optional[str]]:
        """The vectors, the prompt tokens and the model name the server answered under, where it says."""
        client = self._client()

        async def create():
            return await client.embeddings.create(model=model, input=texts, timeout=timeout, encoding_format="float")
        reply = await self._attempt(create, timeout)
        data = getattr(reply, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            raise Transient(f"malformed reply: expected {len(texts)} embeddings")
        try:
            vectors = [list(map(float, item.embedding)) for item in sorted(data, key=lambda d: d.index)]
        except (AttributeError, TypeError, ValueError):
            raise Transient("malformed reply: embeddings are not lists of numbers") from None
        if len({len(v) for v in vectors}) > 1:
            raise Transient("malformed reply: embeddings of different lengths")
        prompt_tokens = getattr(getattr(reply, "usage", None), "prompt_tokens", None)
        return vectors, prompt_tokens, _name(getattr(reply, "model", None))

    async def _attempt(self, create, timeout: float):
        import openai

        try:
            # wait_for bounds the whole attempt: httpx's own timeout is per read, and a server that
            # trickles bytes would never trip it.
            return await asyncio.wait_for(create(), timeout)
        except (asyncio.TimeoutError, openai.APITimeoutError):
            raise Transient(f"no reply within {timeout:g} s") from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status in RETRYABLE_STATUS or status >= 500:
                raise Transient(f"HTTP {status}: {_brief(exc.message)}", _retry_after(exc)) from None
            hint = {401: "; check the API key (api_key_env)", 403: "; check the key's permissions",
                    404: "; check base_url (it usually ends in /v1) and the model name",
                    400: "; check the prompt against the model's context length, and max_tokens and the"
                         " model's profile ([llm.profiles], docs/llm.md)"}.get(status, "")
            raise RequestRejected(f"the endpoint rejected the request: HTTP {status}: {_brief(exc.message)}{hint}",
                                  status) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise Transient(f"connection failed: {_brief(cause) or type(cause).__name__}; check that the server"
                            " is running and base_url is right") from None
        except openai.APIResponseValidationError as exc:
            raise Transient(f"malformed reply: {_brief(exc)}") from None
        except ValueError as exc:  # a body that is not JSON
            raise Transient(f"malformed reply: {_brief(exc)}") from None
