"""`nader-search llm check`'s measurements: what an OpenAI-compatible endpoint does with the
requests the product sends, whatever the model's quality, in about a minute.

Servers differ in ways that fail quietly: a chat template that drops the system message, a JSON
mode that is refused or makes generation many times slower, no usage counts (no token caps), a
model name any single-model server answers to. Each is measured here with a few short requests
through the product's own transport, and the findings end in the profile the product should use
for the model (`[llm.profiles."MODEL"]`, profiles.py).
"""
from __future__ import annotations

import asyncio
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from .config import LLMConfig
from .errors import LLMConfigError, LLMError, RequestRejected
from .profiles import ModelProfile, match_profile, system_tokens_at_least
from .served import is_listed, not_listed_message, served_form
from .transport import OpenAITransport, Transient

GENERATE = 32  # completion tokens per timed request
# About 2,000 characters of instructions, like a short version of the Modifier's.
SYSTEM_TEXT = "You review blocks written in the NADER language. " + " ".join(
    f"Rule {i}: every layer states its input and output shape." for i in range(36))
COUNT_PROMPT = "Write the numbers from 1 to 100 as a JSON object {\"n\": [1, 2, ...]}. Nothing else."
SCHEMA = {"title": "numbers", "type": "object", "properties": {"n": {"type": "array", "items": {"type": "integer"}}},
          "required": ["n"]}
GBNF = 'root ::= "[" num ("," num)* "]"\nnum ::= [0-9] [0-9]?'
_GRAMMAR_REPLY = re.compile(r"\[[0-9]{0,2}(,[0-9]{0,2})*\]?")
# llama.cpp's server takes `grammar`; vLLM `guided_grammar` (before 0.10.2) or `structured_outputs`.
GRAMMAR_FIELDS = {"grammar": {"grammar": GBNF}, "guided_grammar": {"guided_grammar": GBNF},
                  "structured_outputs": {"structured_outputs": {"grammar": GBNF}}}
# The profile's `grammar` value for a field the server obeys (older vLLM's guided_grammar has none).
GRAMMAR_PROFILE = {"grammar": "llama.cpp", "structured_outputs": "vllm"}
CONTEXT_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length", "n_ctx")
# A constrained mode this many times slower per token than none, and by this many seconds a
# request at least (so that the jitter of a fast server decides nothing), is not worth it.
SLOWER, SLOWER_BY_S = 3.0, 0.25
# A server busy with an earlier reply (llama-cpp-python writes one at a time, even for a client
# that has gone) or loading its model answers late, not never.
LATE = "; a server busy with an earlier reply or still loading its model answers late: try again"
REPLY_TOKENS = 256  # a typical agent reply: what a per-token slowdown costs is judged at this length
# A full reply (max_tokens at the measured speed) must take at most this share of the request
# timeout: the rest is for reading the prompt and for a busy moment.
TIMEOUT_SHARE = 0.75
# Below these a whole-block reply does not fit (a block of NADER's sizes restated, 30 nodes or more,
# takes some 400 tokens; the Modifier's first prompt about 1,300, and a repair round adds a reply and
# its feedback): the profile gets `reply = "edits"`, short replies of edits (nader.dsl.edits).
EDITS_BELOW_TOKENS, EDITS_BELOW_CONTEXT = 512, 4096
# A block to restate with one change, as the Modifier asks: a model that does not end its reply
# within BLOCK_PROBE_TOKENS (the block is about 60) restates blocks until max_tokens (Gemma 3 270M
# on llama.cpp did on every reply, issue 28), and gets `reply = "edits"`.
BLOCK_PROBE = ("Rewrite this block with node 4 as GELU instead of ReLU. Reply with the block only.\n\n"
               "##Basic##\n0:input\n1:output\n2:Conv2d(out_channels=C,kernel_size=3)\n3:BN\n4:ReLU\n"
               "0->2\n2->3\n3->4\n4->1\n")
BLOCK_PROBE_TOKENS = 384
# A probe after the first asks for at most the tokens the speed measured so far makes in this
# share of the request timeout: a slow server is measured, not timed out.
PROBE_SHARE = 0.5
NOT_MEASURED = "not measured: an earlier request got no reply in time (the server is slow)"


class Unreachable(LLMError):
    """The endpoint answered no request (exit 2)."""


@dataclass
class Probe:
    """One timed request: whether the server took it and what it cost."""
    accepted: bool
    seconds: Optional[float] = None
    tokens: Optional[int] = None        # completion tokens, reported or estimated from the text
    obeyed: Optional[bool] = None       # the reply has the asked-for form (JSON, the grammar)
    note: str = ""                      # why it was not accepted
    slow: bool = False                  # not accepted because no reply came in time, after others had

    @property
    def per_token(self) -> Optional[float]:
        return self.seconds / self.tokens if self.seconds is not None and self.tokens else None

    def relative_to(self, base: "Probe") -> Optional[float]:
        mine, theirs = self.per_token, base.per_token
        return mine / theirs if mine is not None and theirs else None


@dataclass
class CheckReport:
    base_url: str
    model: str
    listed: list[str] = field(default_factory=list)      # model names GET /models gave
    models_note: str = ""                                  # why there is no list
    context_length: Optional[int] = None
    token_param: Optional[str] = None
    token_params: dict[str, bool] = field(default_factory=dict)
    usage_reported: bool = False
    system: str = "unknown"                                # native | dropped | unknown
    system_detail: str = ""
    json_modes: dict[str, Probe] = field(default_factory=dict)
    grammar: dict[str, Probe] = field(default_factory=dict)
    first_token_s: Optional[float] = None
    tokens_per_s: Optional[float] = None
    stream_note: str = ""
    slow: str = ""                                         # a probe timed out after others were answered
    degradations: list[str] = field(default_factory=list)
    profile: Optional[ModelProfile] = None
    reply_note: str = ""  # why the profile asks for edit replies, when it does
    block_reply: str = ""  # ended | ran to max_tokens | not measured: ...

    @property
    def exit_code(self) -> int:
        return 1 if self.degradations else 0

    @property
    def grammar_field(self) -> Optional[str]:
        """The grammar field the server obeys, if any."""
        return next((name for name, p in self.grammar.items() if p.accepted and p.obeyed), None)

    def as_dict(self) -> dict:
        data = asdict(self)
        for key in ("json_modes", "grammar"):
            for name, probe in getattr(self, key).items():
                data[key][name].update(per_token_s=probe.per_token, relative=probe.relative_to(self.json_modes["none"]))
        data["profile"] = {k: v for k, v in asdict(self.profile).items()} if self.profile else None
        data["grammar_field"] = self.grammar_field
        data["exit_code"] = self.exit_code
        return data


def check_endpoint(config: LLMConfig, *, generate: int = GENERATE) -> CheckReport:
    """Measure the endpoint of `config` (raises Unreachable or LLMConfigError)."""
    if not config.base_url:
        raise LLMConfigError("no LLM endpoint configured: set base_url in [llm] or pass --llm-base-url")
    return asyncio.run(_Checker(config, generate).run())


class _Checker:
    def __init__(self, config: LLMConfig, generate: int):
        self.config = config
        self.generate = generate
        self.timeout = config.request_timeout  # --llm-timeout: a slow CPU server is what the check is for
        self.speed: Optional[float] = None  # completion tokens/s, the fastest of the answered probes
        self.transport = OpenAITransport(config.base_url, config.resolved_key())

    async def run(self) -> CheckReport:
        try:
            return await self._run()
        finally:
            await self.transport.aclose()

    async def _run(self) -> CheckReport:
        entries, note = await self._models()
        model = self.config.model or (entries[0]["id"] if entries else None)
        if not model:
            raise LLMConfigError("no model configured and the server lists none: pass --llm-model")
        report = CheckReport(self.config.base_url, model, [e["id"] for e in entries], note)
        report.context_length = _context_length(entries, model)
        if report.listed and not is_listed(model, report.listed):
            report.degradations.append(not_listed_message(model, report.listed))
        self.model = model
        await self._token_param(report)
        await self._system(report)
        await self._json_modes(report)
        await self._grammar(report)
        await self._stream(report)
        await self._block_reply(report)
        report.profile = _recommend(report, match_profile(model, self.config.profiles), self.config)
        return report

    async def _models(self) -> tuple[list[dict], str]:
        try:
            entries = await self.transport.list_models(self.timeout)
        except Transient as exc:
            if str(exc).startswith(("connection failed", "no reply within")):
                raise Unreachable(f"{self.config.base_url}: {exc}") from None
            return [], f"GET /models failed: {exc}"
        except RequestRejected as exc:
            return [], f"GET /models failed: {exc}"
        return entries, "" if entries else "GET /models listed no model"

    async def _ask(self, messages: list[dict], params: dict) -> tuple[float, Any]:
        started = time.monotonic()
        raw = await self.transport.chat(self.model, messages, params, self.timeout)
        seconds = time.monotonic() - started
        self._measured(seconds, raw)
        return seconds, raw

    def _measured(self, seconds: float, raw) -> None:
        tokens = raw.completion_tokens if isinstance(raw.completion_tokens, int) else max(1, len(raw.text) // 4)
        if seconds > 0 and tokens > 0:
            self.speed = max(self.speed or 0.0, tokens / seconds)

    def _late(self, exc: Exception) -> bool:
        """A timeout after an earlier probe was answered: the server is slow, not silent."""
        return self.speed is not None and "no reply within" in str(exc)

    def _slow(self, report: CheckReport, what: str, detail) -> None:
        if report.slow:  # said once, at the first late probe
            return
        speed = f"{self.speed:.1f} tokens/s" if self.speed else "a speed not measured"
        report.slow = (f"{what}: {detail}, though earlier requests were answered (at about {speed}): the server is"
                       f" slow, not silent")
        report.degradations.append(report.slow + "; a reply cap (max_tokens, recommended below) or a longer"
                                                 " --llm-timeout lets replies finish")

    async def _probe(self, messages: list[dict], params: dict, obeyed=None) -> Probe:
        try:
            seconds, raw = await self._ask(messages, params)
        except RequestRejected as exc:
            return Probe(False, note=str(exc))
        except Transient as exc:
            return Probe(False, note=f"slow: {exc}" if self._late(exc) else f"failed: {exc}", slow=self._late(exc))
        tokens = raw.completion_tokens if raw.completion_tokens is not None else max(1, len(raw.text) // 4)
        return Probe(True, seconds, tokens, obeyed(raw.text) if obeyed else None)

    def _limit(self, report: CheckReport, tokens: int) -> dict:
        """The completion limit of a probe, sized to the speed measured so far (never below 4)."""
        if tokens > 4 and self.speed:
            tokens = max(4, min(tokens, int(self.speed * self.timeout * PROBE_SHARE)))
        return {report.token_param or "max_tokens": tokens}

    async def _token_param(self, report: CheckReport) -> None:
        """The first request of the check: a failure other than a refused parameter ends it."""
        for name in ("max_tokens", "max_completion_tokens"):
            try:
                _, raw = await self._ask(_user("Say OK."), {name: 4})
            except RequestRejected as exc:
                if exc.setup_error:
                    raise Unreachable(f"the endpoint refused the model: {exc}") from None
                report.token_params[name] = False
                continue
            except Transient as exc:
                if self._late(exc):  # max_tokens was answered: the other spelling is not needed
                    self._slow(report, f"a request with {name}", exc)
                    break
                raise Unreachable(f"the endpoint answers no chat request: {exc}"
                                  + (LATE if "no reply within" in str(exc) else "")) from None
            report.token_params[name] = True
            report.usage_reported = report.usage_reported or raw.prompt_tokens is not None
            report.token_param = report.token_param or name
        if report.token_param is None:
            raise Unreachable("the endpoint refused both max_tokens and max_completion_tokens")
        if not report.usage_reported:
            report.degradations.append("the server reports no usage: token caps count estimates, and a dropped"
                                       " system message cannot be noticed")

    async def _system(self, report: CheckReport) -> None:
        if report.slow:
            report.system_detail = "not measured (the server is slow)"
            return
        question = _user("Say OK.")
        try:
            _, alone = await self._ask(question, self._limit(report, 1))
            _, with_system = await self._ask([{"role": "system", "content": SYSTEM_TEXT}, *question],
                                             self._limit(report, 1))
        except RequestRejected as exc:
            report.system, report.system_detail = "dropped", f"a request with a system message was refused: {exc}"
            report.degradations.append(f"the system message: {report.system_detail}; system = merge")
            return
        except Transient as exc:
            report.system_detail = f"not measured: {exc}"
            return
        if alone.prompt_tokens is None or with_system.prompt_tokens is None:
            report.system_detail = "not measured: the server reports no usage"
            return
        added, at_least = with_system.prompt_tokens - alone.prompt_tokens, system_tokens_at_least(SYSTEM_TEXT)
        report.system = "dropped" if added < at_least else "native"
        report.system_detail = (f"a system text of {len(SYSTEM_TEXT)} characters (at least {at_least} tokens)"
                                f" added {added} prompt tokens")
        if report.system == "dropped":
            report.degradations.append(f"the server drops the system message: {report.system_detail}; system = merge")

    async def _json_modes(self, report: CheckReport) -> None:
        formats = {"json_schema": {"type": "json_schema", "json_schema": {"name": "numbers", "schema": SCHEMA}},
                   "json_object": {"type": "json_object"}, "none": None}
        for mode in ("none", "json_schema", "json_object"):  # none first: the server warms up on it
            if report.slow:  # a slow server is not kept waiting for modes it could not show in time
                report.json_modes[mode] = Probe(False, note=NOT_MEASURED, slow=True)
                continue
            params = self._limit(report, self.generate)
            if formats[mode]:
                params["response_format"] = formats[mode]
            report.json_modes[mode] = probe = await self._probe(_user(COUNT_PROMPT), params, _json_start)
            if probe.slow:
                self._slow(report, f"a {mode} request", probe.note.removeprefix("slow: "))
        if not report.json_modes["none"].accepted and not report.slow:
            raise Unreachable(f"the endpoint failed a plain request: {report.json_modes['none'].note}")
        for mode in ("json_schema", "json_object"):
            probe = report.json_modes[mode]
            if probe.slow:
                continue
            if not probe.accepted:
                report.degradations.append(f"JSON mode {mode} not accepted: {probe.note}")
            elif _too_slow(probe, report.json_modes["none"]):
                report.degradations.append(f"JSON mode {mode} is {probe.relative_to(report.json_modes['none']):.1f}"
                                           " times slower per token than unconstrained generation")

    async def _grammar(self, report: CheckReport) -> None:
        for name, extra in GRAMMAR_FIELDS.items():
            if report.slow:
                report.grammar[name] = Probe(False, note=NOT_MEASURED, slow=True)
                continue
            params = {**self._limit(report, self.generate), "extra_body": extra}
            report.grammar[name] = probe = await self._probe(_user("List some numbers."), params,
                                                             lambda text: bool(_GRAMMAR_REPLY.fullmatch(text.strip())))
            if probe.slow:
                self._slow(report, f"a request with {name}", probe.note.removeprefix("slow: "))

    async def _block_reply(self, report: CheckReport) -> None:
        """Whether a block restated with one change ends on its own within BLOCK_PROBE_TOKENS."""
        if report.slow:
            report.block_reply = NOT_MEASURED
            return
        try:
            _, raw = await self._ask(_user(BLOCK_PROBE), self._limit(report, BLOCK_PROBE_TOKENS))
        except (RequestRejected, Transient) as exc:
            report.block_reply = f"not measured: {exc}"
            return
        report.block_reply = "ran to max_tokens" if raw.finish_reason == "length" else "ended"

    async def _stream(self, report: CheckReport) -> None:
        if report.slow:
            report.tokens_per_s, report.stream_note = self.speed, "not measured (the server is slow); the speed is the plain requests'"
            return
        started = time.monotonic()
        try:
            first, raw = await self.transport.chat_streamed(self.model, _user(COUNT_PROMPT),
                                                            self._limit(report, self.generate), self.timeout)
        except (RequestRejected, Transient) as exc:
            if self._late(exc):
                self._slow(report, "the streamed request", exc)
                report.tokens_per_s = self.speed  # the plain requests' speed: what sizes the reply cap
                report.stream_note = "no streamed reply in time; the speed is the plain requests'"
            else:
                report.stream_note = f"streaming failed: {exc}"
            return
        total = time.monotonic() - started
        report.first_token_s = first
        tokens = raw.completion_tokens if raw.completion_tokens is not None else max(1, len(raw.text) // 4)
        if first is not None and total > first and tokens > 1:
            report.tokens_per_s = (tokens - 1) / (total - first)
        if raw.completion_tokens is None:
            report.stream_note = "no usage in the stream (tokens estimated from the text)"


def _recommend(report: CheckReport, current: ModelProfile, config: LLMConfig) -> ModelProfile:
    """The profile for the model: the current one's temperature and reasoning settings, the rest
    from the measurements."""
    base = report.json_modes["none"]

    def worth(mode: str) -> bool:
        probe = report.json_modes.get(mode)
        return bool(probe and probe.accepted and not _too_slow(probe, base))

    json = next((mode for mode in ("json_schema", "json_object") if worth(mode)), "none")
    grammar = next((GRAMMAR_PROFILE[name] for name, probe in report.grammar.items()
                    if name in GRAMMAR_PROFILE and probe.accepted and probe.obeyed and not _too_slow(probe, base)),
                   "none")
    system = "merge" if report.system == "dropped" else ("native" if report.system == "native" else current.system)
    pattern = re.sub(r"([*?\[])", r"[\1]", report.model)  # the model's name alone, glob characters escaped
    modes = [report.json_modes.get(json), report.grammar.get(next(
        (name for name, mode in GRAMMAR_PROFILE.items() if mode == grammar), ""))]
    slowdown = max([1.0, *(p.relative_to(base) or 1.0 for p in modes if p is not None)])
    context, cap = report.context_length or current.context, _reply_cap(report, config, slowdown) or current.max_tokens
    return ModelProfile(pattern, token_param=report.token_param or current.token_param,
                        temperature=current.temperature, reasoning_effort=current.reasoning_effort,
                        json=json, system=system, grammar=grammar, context=context, max_tokens=cap,
                        reply=_reply_form(report, current, context, min(cap or config.max_tokens, config.max_tokens)),
                        small=current.small or report.block_reply == "ran to max_tokens")


def _reply_form(report: CheckReport, current: ModelProfile, context: Optional[int], reply_tokens: int) -> str:
    """`edits` where a whole block does not fit a reply or the context (the note says which), else
    the current profile's."""
    if report.block_reply == "ran to max_tokens":
        report.reply_note = (f"a block restated with one change did not end within {BLOCK_PROBE_TOKENS} tokens: "
                             "reply = \"edits\", small = true (answers before rationales)")
    elif reply_tokens < EDITS_BELOW_TOKENS:
        report.reply_note = (f"a reply of at most {reply_tokens} tokens may cut a whole block (under "
                             f"{EDITS_BELOW_TOKENS}): reply = \"edits\"")
    elif context is not None and context < EDITS_BELOW_CONTEXT:
        report.reply_note = (f"a context of {context} tokens holds the Modifier's prompt and a whole block hardly "
                             f"(under {EDITS_BELOW_CONTEXT}): reply = \"edits\"")
    else:
        return current.reply
    return "edits"


def _reply_cap(report: CheckReport, config: LLMConfig, slowdown: float) -> Optional[int]:
    """The most completion tokens (a multiple of 256) a reply can have and still finish within
    TIMEOUT_SHARE of the request timeout, at the measured speed divided by the slowdown of the
    constrained modes the profile uses; None when `[llm] max_tokens` already fits. Listed as a
    degradation: long replies are cut."""
    if not report.tokens_per_s:
        return None
    speed = report.tokens_per_s / slowdown
    seconds = config.request_timeout * TIMEOUT_SHARE - (report.first_token_s or 0.0)
    fits = int(speed * max(0.0, seconds)) // 256 * 256
    if fits >= config.max_tokens:
        return None
    full = config.max_tokens / speed + (report.first_token_s or 0.0)
    if fits < 256:
        report.degradations.append(
            f"at {speed:.1f} tokens/s even a 256-token reply may not finish within the {config.request_timeout:g} s"
            " request timeout: raise --llm-timeout")
        return 256
    report.degradations.append(
        f"at {speed:.1f} tokens/s a reply of max_tokens {config.max_tokens} takes about {full:.0f} s, over the"
        f" {config.request_timeout:g} s request timeout: max_tokens = {fits} for this model (or raise --llm-timeout)")
    return fits


def _too_slow(probe: Probe, base: Probe) -> bool:
    """More than SLOWER times slower per token, and by more than SLOWER_BY_S over a typical reply
    (the probes' own replies are short, so their total times would hide a per-token cost)."""
    relative = probe.relative_to(base)
    if not relative or relative <= SLOWER:
        return False
    return (probe.per_token - base.per_token) * REPLY_TOKENS > SLOWER_BY_S


def _context_length(entries: list[dict], model: str) -> Optional[int]:
    entry = next((e for e in entries if served_form(e["id"]) == served_form(model)),
                 entries[0] if len(entries) == 1 else None)
    if entry is None:
        return None
    places = [entry, entry.get("meta") if isinstance(entry.get("meta"), dict) else {}]
    for place in places:
        for key in (*CONTEXT_KEYS, "n_ctx_train"):
            value = place.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _json_start(text: str) -> bool:
    return text.lstrip().startswith("{")


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]
