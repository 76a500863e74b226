"""Whether the server serves the model a run names: the name against GET /models, and against
the name each reply says it came from.

Single-model servers (llama.cpp's, LM Studio, some vLLM setups) answer under any model name, so
a mistyped `--llm-model` goes unnoticed while profiles and prices are chosen by that name.
`llm check` reports it; the client notices it on its first call to the endpoint, warns once per
model and records it in the run (`meta` key `model_name`). Neither ever fails a call over it:
a server without a model list is simply not judged.
"""
from __future__ import annotations

import asyncio
import difflib
import logging
import re
import threading
import weakref
from typing import Optional

from .errors import LLMError
from .record import CallStore, canonical_json
from .transport import OpenAITransport, Transient

MODEL_NAME_META = "model_name"  # meta key: {model: what the server said of the name}
LIST_TIMEOUT = 5.0              # seconds for GET /models: a local server answers at once
FLAGS = {"chat": "--llm-model", "embed": "--embedding-model"}
# A dated snapshot the server answers an alias with (gpt-4o -> gpt-4o-2024-08-06, -0613, -20241022).
_SNAPSHOT = re.compile(r"-\d{4}(-?\d{2}){0,2}")
log = logging.getLogger("nader.llm")


def served_form(name: str) -> str:
    """A model name as servers vary it: case, a file's folder and `.gguf` (llama.cpp lists the
    model's path), Ollama's `:latest` tag."""
    name = name.strip().lower().rsplit("/", 1)[-1]
    for suffix in (".gguf", ":latest"):
        name = name[:-len(suffix)] if name.endswith(suffix) else name
    return name


def is_listed(model: str, listed: list[str]) -> bool:
    return served_form(model) in {served_form(name) for name in listed}


def answered_as_other(model: str, answered: Optional[str]) -> bool:
    """Whether the reply's model name is another model than the one asked (a dated snapshot of
    it is the same model)."""
    if not answered:
        return False
    asked, got = served_form(model), served_form(answered)
    return got != asked and not (got.startswith(asked) and _SNAPSHOT.fullmatch(got[len(asked):]))


def _fix(model: str, names: list[str], flag: str) -> str:
    near = difflib.get_close_matches(model, names, n=1, cutoff=0.6) or (names if len(names) == 1 else [])
    return f"pass {flag} {near[0]}" if near else f"pass {flag} with one of them"


def not_listed_message(model: str, listed: list[str], flag: str = FLAGS["chat"]) -> str:
    shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
    return (f"model {model!r} is not among the models the server lists ({shown}); profiles and prices are chosen"
            f" by the name you give: {_fix(model, listed, flag)}")


def answered_as_message(model: str, answered: str, flag: str = FLAGS["chat"]) -> str:
    return (f"the server answered a request for model {model!r} as model {answered!r}; profiles and prices are"
            f" chosen by the name you give: {_fix(model, [answered], flag)}")


class ModelNames:
    """The client's part: GET /models once (on the first call that reaches the endpoint), then
    each model's name against it and each reply's name against the one asked; a finding is
    warned about once per model in this session and kept in the run's record."""

    def __init__(self, transport: Optional[OpenAITransport], timeout: float, store: Optional[CallStore],
                 replay: Optional[CallStore] = None):
        self._transport = transport
        self._timeout = min(timeout, LIST_TIMEOUT)
        self._store = store
        self._listed: Optional[list[str]] = None   # None: not asked yet
        self._checked: set[str] = set()
        self._lock = threading.Lock()
        self._loop_locks: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]" = \
            weakref.WeakKeyDictionary()
        # What the replayed run and earlier sessions of this one found: kept in this run's record.
        self.findings: dict[str, dict] = {}
        for record in (replay, store):
            if record is not None:
                self.findings.update(record.get_meta_dict(MODEL_NAME_META))
        if store is not None and self.findings:
            store.set_meta(MODEL_NAME_META, canonical_json(self.findings))
        self._warned: set[str] = set()

    async def check_listed(self, model: str, kind: str) -> None:
        """Compare `model` with the server's list, the first time this session asks for it."""
        if model in self._checked or self._transport is None:
            return
        async with self._loop_lock():  # concurrent first calls wait for the one listing
            if self._listed is None:
                self._listed = await self._list()
        with self._lock:
            if model in self._checked:
                return
            self._checked.add(model)
        if self._listed and not is_listed(model, self._listed):
            self._found(model, {"finding": "not_listed", "listed": self._listed[:20],
                                "message": not_listed_message(model, self._listed, FLAGS.get(kind, FLAGS["chat"]))})

    def check_reply(self, model: str, answered: Optional[str], kind: str) -> None:
        """Compare the name a reply came back under with the one asked."""
        if answered_as_other(model, answered):
            self._found(model, {"finding": "answered_as", "answered_as": answered,
                                "message": answered_as_message(model, answered, FLAGS.get(kind, FLAGS["chat"]))})

    async def _list(self) -> list[str]:
        try:
            return [entry["id"][:200] for entry in await self._transport.list_models(self._timeout)]
        except (Transient, LLMError) as exc:  # no list, no judgement: the calls themselves will tell
            log.debug("model names not checked: GET /models failed: %s", exc)
            return []

    def _found(self, model: str, finding: dict) -> None:
        with self._lock:
            if model in self._warned:
                return
            self._warned.add(model)
            self.findings[model] = finding
            if self._store is not None:
                self._store.set_meta(MODEL_NAME_META, canonical_json(self.findings))
        log.warning("warning: %s", finding["message"])

    def _loop_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        with self._lock:
            lock = self._loop_locks.get(loop)
            if lock is None:
                lock = self._loop_locks[loop] = asyncio.Lock()
            return lock
