"""The one LLM client of the product: chat and embeddings against any OpenAI-compatible endpoint.

    client = LLMClient.from_config(load_config(path), store=RUN_DIR, role="proposer")
    reply = await client.chat(messages, role="proposer", arch_id="a17", json=True)
    reply = client.chat_sync(messages)              # the same from synchronous code
    vectors = await client.embed(["idea one", "idea two"])
    client.usage.as_dict()                         # tokens and dollars, total / per role / per arch

A call is answered, in this order, by: the recorded run being replayed (replay mode; a miss
raises ReplayMiss), the run's own record (an identical earlier request: free), or the endpoint
(at most `max_concurrency` at once, `request_timeout` per attempt, `deadline` per call, retries
with jittered exponential back-off, the circuit breaker, the caps). Every call is recorded.

A server that silently drops the system message (a chat template without a system role) is
noticed from its usage: fewer prompt tokens than the system text alone must take. The client
then warns once, asks again with the system text merged into the first user message, and does
so for the rest of the run (recorded in the run's `meta` table as `system_merge`). A model name
the server does not list, or a reply under another name, is warned about once (served.py).
"""
from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from nader.runtime.integrity import json_cell

from .accounting import Ledger, Tally, Usage, booking, reported, usage_count
from .breaker import CircuitBreaker
from .config import LLMConfig
from .errors import CallFailed, LLMConfigError, ReplayMiss, RequestRejected
from .prices import find_price
from .profiles import match_profile, merge_system, request_params, system_tokens_at_least
from .record import CallStore, canonical_json, decode_vectors, encode_vectors, request_key
from .served import ModelNames
from .syncloop import SyncLoop
from .transport import OpenAITransport, Transient

EMBED_BATCH = 128  # inputs per embeddings request
SYSTEM_MERGE_META = "system_merge"  # meta key: {model: why the client merges its system text}
log = logging.getLogger("nader.llm")


@dataclass(frozen=True)
class ChatReply:
    text: str
    finish_reason: Optional[str]
    prompt_tokens: Optional[int]
    completion_tokens: Optional[int]
    cost_usd: Optional[float]
    latency_s: float
    source: str        # endpoint | cache | replay
    call_id: Optional[int]
    model: str

    @property
    def truncated(self) -> bool:
        """The reply hit the completion-token limit and is cut off."""
        return self.finish_reason == "length"


@dataclass(frozen=True)
class CallEvent:
    """One finished call, as the client's observers see it (a display, a log): never a failure."""
    role: str
    kind: str          # chat | embed
    model: str
    source: str        # endpoint | cache | replay
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cost_usd: Optional[float]
    arch_id: Optional[str]


# Observers every client made from now on gets: how a CLI watches clients that a library builds.
_NEW_CLIENT_OBSERVERS: list = []


def observe_new_clients(observer: Callable[[CallEvent], None]) -> Callable[[], None]:
    """Attach `observer` to every LLMClient made after this call; returns the function that stops it."""
    _NEW_CLIENT_OBSERVERS.append(observer)
    return lambda: _NEW_CLIENT_OBSERVERS.remove(observer) if observer in _NEW_CLIENT_OBSERVERS else None


def estimate_tokens(text: str) -> int:
    """A generous token count for cap checks (about 4 characters a token in English; 3 here)."""
    return len(text) // 3 + 1


class LLMClient:
    def __init__(self, config: LLMConfig, *, store: Optional[CallStore] = None, replay: Optional[CallStore] = None,
                 role: Optional[str] = None, rng: Optional[random.Random] = None):
        if replay is None and not config.base_url:
            raise LLMConfigError(
                "no LLM endpoint configured: set base_url in the [llm] section of the config file or pass"
                " --llm-base-url (e.g. http://localhost:11434/v1 for Ollama, http://localhost:8000/v1 for vLLM)")
        if replay is None and not config.model and not config.embedding_model:  # embeddings alone: kb commands
            raise LLMConfigError("no model configured: set model in [llm] or pass --llm-model")
        self.config = config
        self.store = store
        self.replay = replay
        self.role = role or "default"
        self._rng = rng or random.Random()
        self._profiles = config.profiles
        self._breaker = CircuitBreaker(config.breaker_failures)
        prior = store.spent() if store is not None else None
        self.ledger = Ledger(max_cost_usd=config.max_cost_usd, max_total_tokens=config.max_total_tokens, prior=prior)
        if config.max_cost_usd is not None and replay is None:
            for model in filter(None, (config.model, config.embedding_model)):
                if find_price(model, config.prices) is None:
                    raise LLMConfigError(
                        f"max_cost_usd is set but model {model!r} has no price: add [llm.prices.\"{model}\"]"
                        " with input and output in USD per million tokens (0 for a local model)")
        self._transport = OpenAITransport(config.base_url, config.resolved_key()) if config.base_url else None
        self._occurrences: dict[str, int] = {}
        self._occ_lock = threading.Lock()
        self._semaphores: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]" = \
            weakref.WeakKeyDictionary()
        self._sync = SyncLoop()
        # Models whose server was seen dropping the system message, in this run or the replayed
        # one: their calls merge it from the start, so a resumed or replayed run asks as the
        # original did after its switch.
        self._merged: dict[str, dict] = {}
        for record in (replay, store):
            if record is not None:
                self._merged.update(record.get_meta_dict(SYSTEM_MERGE_META))
        self._merge_lock = threading.Lock()
        self._observers: list = list(_NEW_CLIENT_OBSERVERS)
        self._names = ModelNames(self._transport, config.request_timeout, store, replay)
        if store is not None:
            store.set_meta("llm_config", canonical_json(describe_config(config)))
            if self._merged:
                store.set_meta(SYSTEM_MERGE_META, canonical_json(self._merged))

    @classmethod
    def from_config(cls, config: LLMConfig, *, store: Union[None, str, Path, CallStore] = None,
                    replay: Union[None, str, Path, CallStore] = None, role: Optional[str] = None) -> "LLMClient":
        """`store`: the run directory (or an open CallStore) where calls are recorded; `replay`: a
        recorded run directory that answers every call instead of an endpoint."""
        if store is not None and not isinstance(store, CallStore):
            store = CallStore(store)
        if replay is not None and not isinstance(replay, CallStore):
            replay = CallStore(replay, read_only=True)
        return cls(config, store=store, replay=replay, role=role)

    @property
    def usage(self) -> Usage:
        """What this client's calls used (this session); `ledger.prior` holds the run's earlier sessions."""
        return self.ledger.usage

    def add_observer(self, observer: Callable[[CallEvent], None]) -> None:
        """Call `observer(CallEvent)` after each call that got its reply (from any source)."""
        self._observers.append(observer)

    def _notify(self, common: dict, row: dict) -> None:
        if not self._observers:
            return
        event = CallEvent(common["role"], common["request"]["kind"], common["request"]["model"], row["source"],
                          row["prompt_tokens"] or 0, row["completion_tokens"] or 0, row["latency_s"],
                          row["cost_usd"], common["arch_id"])
        for observer in self._observers:
            try:
                observer(event)
            except Exception:  # a display's fault must never fail the call it reports
                log.debug("LLM call observer failed", exc_info=True)

    # ------------------------------------------------------------------ chat
    async def chat(self, messages: Sequence[dict], *, role: Optional[str] = None, arch_id: Optional[str] = None,
                   prompt: Optional[str] = None, json: bool = False, schema: Optional[dict] = None,
                   max_tokens: Optional[int] = None, temperature: Optional[float] = None,
                   model: Optional[str] = None, grammar: Optional[str] = None) -> ChatReply:
        """One chat completion. `json`/`schema` ask for JSON output where the model supports it
        (the caller still parses the text); `grammar` (GBNF) constrains the reply where the
        model's profile names a grammar field; `prompt` names the template, for the record."""
        model = model or self.config.model
        if model is None:
            raise LLMConfigError("no model configured: set model in [llm] or pass --llm-model")
        asked = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
        profile = match_profile(model, self._profiles)
        system_text = "\n\n".join(m["content"] for m in asked if m["role"] == "system")
        merging = bool(system_text) and (profile.system == "merge" or model in self._merged)
        messages = merge_system(asked) if merging else asked
        max_tokens = max_tokens or self.config.max_tokens
        if profile.max_tokens:  # a slow server: a reply must finish within the request timeout
            max_tokens = min(max_tokens, profile.max_tokens)
        params = request_params(profile, max_tokens=max_tokens,
                                temperature=self.config.temperature if temperature is None else temperature,
                                reasoning_effort=self.config.reasoning_effort, json_schema=schema, want_json=json,
                                grammar=grammar)
        request = {"kind": "chat", "model": model, "messages": messages, "params": params}
        prompt_estimate = sum(estimate_tokens(m["content"]) + 4 for m in messages)
        usage_reported = [False]

        async def attempt(timeout: float):
            raw = await self._transport.chat(model, messages, params, timeout)
            self._names.check_reply(model, raw.model, "chat")
            usage_reported[0] = usage_count(raw.prompt_tokens) is not None
            reply = {"text": raw.text, "finish_reason": raw.finish_reason}
            # Absent figures are estimated; present ones go as the server gave them (_from_endpoint
            # books one that is not a count, NaN or negative, at the call's reservation).
            prompt_tokens = raw.prompt_tokens if raw.prompt_tokens is not None else prompt_estimate
            completion = raw.completion_tokens if raw.completion_tokens is not None else estimate_tokens(raw.text)
            return reply, prompt_tokens, completion

        reply, row = await self._call(request, role or self.role, arch_id, prompt, attempt,
                                      worst_tokens=(prompt_estimate, max_tokens))
        # Judged on the server's own figure: a row of this run's record holds it or the estimate
        # (never below the bound); a replay reproduces what the recorded run did, switch or not.
        counted = row["prompt_tokens"] if row["source"] == "cache" or usage_reported[0] else None
        if system_text and not merging and self._system_dropped(model, system_text, counted, row["call_id"]):
            # The reply was written without its instructions: set it aside and ask again, merged.
            return await self.chat(asked, role=role, arch_id=arch_id, prompt=prompt, json=json, schema=schema,
                                   max_tokens=max_tokens, temperature=temperature, model=model, grammar=grammar)
        return ChatReply(reply["text"], reply.get("finish_reason"), row["prompt_tokens"], row["completion_tokens"],
                         row["cost_usd"], row["latency_s"], row["source"], row["call_id"], model)

    def _system_dropped(self, model: str, system_text: str, prompt_tokens: Optional[int],
                        call_id: Optional[int]) -> bool:
        """Whether the server's prompt tokens show it dropped the system message; the first time
        for a model, warn, and record the switch to merging in the run."""
        at_least = system_tokens_at_least(system_text)
        if prompt_tokens is None or prompt_tokens >= at_least:
            return False
        if call_id is not None and self.store is not None:
            self.store.reject(call_id, f"the server dropped the system message (prompt_tokens {prompt_tokens});"
                                       " asked again with it merged into the first user message")
        with self._merge_lock:
            if model in self._merged:
                return True  # a call in flight at the switch
            message = (f"the server dropped the system message (prompt_tokens {prompt_tokens} for a system text of"
                       f" about {at_least} tokens); switching to system=merge for model {model!r}")
            self._merged[model] = {"prompt_tokens": prompt_tokens, "system_tokens_at_least": at_least,
                                   "call_id": call_id, "message": message}
            if self.store is not None:
                self.store.set_meta(SYSTEM_MERGE_META, canonical_json(self._merged))
        log.warning("warning: %s", message)
        return True

    def window(self, model: Optional[str] = None) -> tuple[Optional[int], int]:
        """The model's context length from its profile (None: unknown), and the completion tokens a
        call asks for by default: `[llm] max_tokens`, lowered by the profile's `max_tokens`."""
        model, limit = model or self.config.model, self.config.max_tokens
        profile = match_profile(model, self._profiles) if model else None
        return (profile.context, min(limit, profile.max_tokens or limit)) if profile else (None, limit)

    @property
    def model_name_findings(self) -> dict[str, dict]:
        """Models the server does not list or answered under another name, with the warning."""
        return dict(self._names.findings)

    @property
    def system_merged(self) -> dict[str, dict]:
        """Models switched to system=merge in this run, with why (what the run records)."""
        return dict(self._merged)

    def reject(self, reply: ChatReply, reason: str) -> None:
        """Mark `reply` as unusable (e.g. not the JSON asked for): this run asks again rather than
        reuse it, while a replay still reproduces it."""
        if self.store is not None and reply.call_id is not None:
            self.store.reject(reply.call_id, reason)

    @property
    def embedding_model(self) -> Optional[str]:
        return self.config.embedding_model

    def chat_sync(self, messages: Sequence[dict], **kwargs) -> ChatReply:
        """`chat` from synchronous code (runs on the client's own event-loop thread)."""
        return self._run_sync(self.chat(messages, **kwargs))

    # ------------------------------------------------------------------ embeddings
    async def embed(self, texts: Sequence[str], *, role: str = "embed", arch_id: Optional[str] = None) -> list[list[float]]:
        """Embeddings of `texts` from the endpoint's embeddings API (`embedding_model`), in order,
        as float32 values (what the record keeps)."""
        model = self.config.embedding_model
        if model is None:
            raise LLMConfigError("no embedding model configured: set embedding_model in [llm] or pass --embedding-model")
        texts = [str(t) for t in texts]
        batches = [texts[i:i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]
        done = await asyncio.gather(*(self._embed_batch(model, batch, role, arch_id) for batch in batches))
        return [vector for batch in done for vector in batch]

    def embed_sync(self, texts: Sequence[str], **kwargs) -> list[list[float]]:
        return self._run_sync(self.embed(texts, **kwargs))

    async def _embed_batch(self, model: str, texts: list[str], role: str, arch_id) -> list[list[float]]:
        request = {"kind": "embed", "model": model, "input": texts, "params": {}}
        prompt_estimate = sum(estimate_tokens(t) + 2 for t in texts)  # + the special tokens servers count

        async def attempt(timeout: float):
            vectors, prompt_tokens, answered_as = await self._transport.embed(model, texts, timeout)
            self._names.check_reply(model, answered_as, "embed")
            return encode_vectors(vectors), (prompt_tokens if prompt_tokens is not None else prompt_estimate), 0

        reply, _ = await self._call(request, role, arch_id, None, attempt, worst_tokens=(prompt_estimate, 0))
        return decode_vectors(reply)

    # ------------------------------------------------------------------ the call path
    def skip_recorded(self, arch_id: str) -> None:
        """Count the calls this run recorded for `arch_id` as asked again in this session: a command
        that reads a unit's result back instead of redoing it keeps the identical-request numbering
        (and so the record's answers and a replay's) as if it had redone it."""
        if self.store is None:
            return
        with self._occ_lock:
            for key, occurrence in self.store.last_occurrences(arch_id).items():
                self._occurrences[key] = max(self._occurrences.get(key, 0), occurrence + 1)

    def _next_occurrence(self, key: str) -> int:
        with self._occ_lock:
            n = self._occurrences.get(key, 0)
            self._occurrences[key] = n + 1
            return n

    def _record(self, **fields) -> Optional[int]:
        return self.store.put(**fields) if self.store is not None else None

    async def _call(self, request: dict, role: str, arch_id, prompt, attempt, *, worst_tokens: tuple[int, int]):
        key = request_key(request)
        common = dict(key=key, occurrence=self._next_occurrence(key), request=request, role=role, arch_id=arch_id,
                      prompt=prompt)
        answered = self._from_record(common)
        if answered is not None:
            return answered
        self._breaker.check()
        await self._names.check_listed(request["model"], request["kind"])  # once per model: GET /models
        async with self._semaphore():
            self._breaker.check()  # it may have opened while this call waited for a slot
            return await self._from_endpoint(common, attempt, worst_tokens)

    def _from_record(self, common: dict):
        """The reply of the recorded run (replay) or of this run's record (cache), or None."""
        started = time.perf_counter()
        for source, record in (("replay", self.replay), ("cache", self.store)):
            if record is None:
                continue
            found = record.answer(common["key"], common["occurrence"], replaying=source == "replay")
            if found is None:
                if source == "replay":
                    raise ReplayMiss(self._miss_message(common["request"], common["role"], common["occurrence"]))
                continue
            call_id, reply_json, prompt_tokens, completion_tokens, _ = found
            problems: list = []  # a damaged cell (not UTF-8, nested too deep, not JSON) is asked again
            reply = json_cell(reply_json, "llm_calls", f"call_id={call_id}", "reply", problems, expect=(dict,))
            if reply is None or not isinstance(reply.get("text", ""), str):
                message = problems[0] if problems else f"llm_calls row {call_id}: no reply text"
                if source == "replay":
                    raise ReplayMiss(f"the recorded reply cannot be read: {message}")
                log.warning("warning: %s; asking the endpoint again", message)
                continue
            prompt_tokens, completion_tokens = usage_count(prompt_tokens) or 0, usage_count(completion_tokens) or 0
            latency = time.perf_counter() - started
            row = dict(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost_usd=0.0,
                       latency_s=latency, source=source)
            row["call_id"] = self._record(**common, reply=reply, status="ok", attempts=0, **row)
            self.ledger.settle(None, Tally(recorded_calls=1), common["role"], common["arch_id"])
            self._notify(common, row)
            return reply, row
        return None

    async def _from_endpoint(self, common: dict, attempt, worst_tokens: tuple[int, int]):
        """Ask the endpoint: reserve the worst case under the caps, then attempts until the deadline."""
        role, arch_id = common["role"], common["arch_id"]
        price = find_price(common["request"]["model"], self.config.prices)
        prompt_est, completion_max = worst_tokens
        reservation = self.ledger.reserve(prompt_est + completion_max,
                                          price.cost(prompt_est, completion_max) if price else 0.0)
        started = time.perf_counter()
        deadline = started + self.config.deadline
        attempts, retried, last_error = 0, [], "no attempt made"  # retried: why earlier attempts failed
        try:
            while True:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    last_error += f" (deadline of {self.config.deadline:g} s passed)"
                    break
                attempts += 1
                try:
                    reply, prompt_tokens, completion_tokens = await attempt(min(self.config.request_timeout, remaining))
                except Transient as exc:
                    last_error = str(exc)
                    retried.append(last_error)
                    if attempts > self.config.max_retries:
                        break
                    delay = self._backoff(attempts - 1, exc.retry_after)
                    if time.perf_counter() + delay >= deadline:
                        last_error += f" (deadline of {self.config.deadline:g} s leaves no time to retry)"
                        break
                    await asyncio.sleep(delay)
                    continue
                latency = time.perf_counter() - started
                held, reservation = reservation, None
                billed, booked, note = booking(held, prompt_tokens, completion_tokens, worst_tokens, price)
                self.ledger.settle(held, booked, role, arch_id)  # never above the reservation
                self._breaker.success()
                row = dict(prompt_tokens=booked.prompt_tokens, completion_tokens=booked.completion_tokens,
                           cost_usd=booked.cost_usd if price else None, latency_s=latency, source="endpoint")
                notes = (["retried after: " + "; ".join(retried)] if retried else []) + ([note] if note else [])
                row["call_id"] = self._record(**common, reply=reply, status="ok", attempts=attempts,
                                              error="; ".join(notes) or None, **row)
                self._notify(common, row)
                if note:
                    log.warning("warning: %s", note)
                overrun = self.ledger.overrun(held, billed, reported(prompt_tokens, completion_tokens, billed))
                if billed is not booked and overrun is not None:  # the reply stays recorded: a resume gets it free
                    raise overrun
                return reply, row
        except RequestRejected as exc:
            # Retrying cannot help, but a rejection per call (a bad key, a wrong model) is the
            # endpoint failing this run: it counts toward the breaker like a failed call.
            down = self._breaker.failure(self.config.base_url, str(exc))
            self._fail(common, str(exc) + (f"; {down}" if down else ""), started, attempts)
            if down is not None:
                raise down from None
            raise
        finally:
            self.ledger.release(reservation)
        message = (f"{common['request']['kind']} call to {self.config.base_url} failed after {attempts} attempt(s):"
                   f" {last_error}")
        down = self._breaker.failure(self.config.base_url, last_error)
        self._fail(common, message + (f"; {down}" if down else ""), started, attempts)
        if down is not None:
            raise down
        raise CallFailed(message)

    def _fail(self, common: dict, error: str, started: float, attempts: int) -> None:
        self.ledger.settle(None, Tally(failed_calls=1), common["role"], common["arch_id"])
        self._record(**common, reply=None, status="failed", source="endpoint", error=error,
                     latency_s=time.perf_counter() - started, attempts=attempts)

    def _backoff(self, retry: int, retry_after: Optional[float]) -> float:
        """Full jitter: uniform(0, min(max, base * 2**retry)); a server's Retry-After is a floor."""
        delay = self._rng.uniform(0.0, min(self.config.backoff_max, self.config.backoff_base * (2 ** retry)))
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.config.backoff_max))
        return delay

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.config.max_concurrency)
        return semaphore

    def _miss_message(self, request: dict, role: str, occurrence: int) -> str:
        nth = f" (identical request number {occurrence + 1})" if occurrence else ""
        head = (f"replay miss: the recorded run {self.replay.run_dir} has no {request['kind']} call for role"
                f" {role!r}, model {request['model']!r}, with this request{nth}")
        recorded = self.replay.similar_requests(request["kind"], role)
        if not recorded:
            return head + f"; it recorded no {request['kind']} call for that role"
        differences = [_differences(request, other) for other in recorded]
        nearest = min(differences, key=len)
        return head + f"; the nearest of its {len(recorded)} such calls differs in: {', '.join(nearest[:5]) or 'occurrence count'}"

    # ------------------------------------------------------------------ sync support and closing
    def _run_sync(self, coroutine):
        return self._sync.run(coroutine)

    async def aclose(self) -> None:
        """Close the connections opened from the running event loop."""
        if self._transport is not None:
            await self._transport.aclose()

    def close(self) -> None:
        """Close the sync loop's connections and thread, and the record."""
        if self._sync.started:
            self._sync.close(self.aclose())
        for record in (self.store, self.replay):
            if record is not None:
                record.close()


def _differences(a: dict, b: dict, path: str = "") -> list[str]:
    """Where two JSON values differ, as paths (`params.temperature`, `messages[1].content`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for k in sorted(set(a) | set(b)):
            found += _differences(a.get(k), b.get(k), f"{path}.{k}" if path else k)
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "value"]


def describe_config(config: LLMConfig) -> dict:
    """The configuration as recorded in the run (never the key)."""
    skip = {"api_key", "profiles", "prices"}
    described = {k: v for k, v in vars(config).items() if k not in skip}
    described["profiles"] = [vars(p) for p in config.profiles]
    described["prices"] = [vars(p) for p in config.prices]
    return described
