"""`nader-search bench-nad`: the Modifier on the NAD benchmark, per setting.

For every request the Modifier rewrites the base block to follow the request's text (the request
plays the Proposer's plan, so the Reader and Proposer switches do not apply here). A setting
switches the Modifier's feedback rounds and the Reflector's experience base:

| setting | feedback rounds | experience |
|---|---|---|
| `full` | k (default 3) | on |
| `no-feedback` | 1 | on |
| `no-experience` | k | off |
| `no-feedback-no-experience` | 1 | off |

Measured per setting: executability (the first reply verifies as a base block), executability
after feedback (the last reply verifies), success (it verifies and passes the request's machine
checks, `nad.score`), LLM rounds and tokens per request (every agent's calls, the Reflector's
included). Each setting has its own experience base (scope `bench:<setting>`), filled as its
requests go, in file order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional

from ..llm.errors import CallFailed, ReplayMiss, RunStopped
from ..modifier import Modifier
from ..experiences import ExperienceBase
from ..reflector import Reflector
from ..tokens import CountingClient
from . import nad
from .nad import SETTINGS



@dataclass
class RequestResult:
    request_id: str
    level: str
    first_ok: bool
    ok: bool
    success: bool
    rounds: int
    tokens: int
    reason: str = ""


@dataclass
class SettingResult:
    setting: str
    results: List[RequestResult] = field(default_factory=list)
    stopped: Optional[str] = None

    def rate(self, attr: str, level: Optional[str] = None) -> float:
        rows = [r for r in self.results if level is None or r.level == level]
        return sum(getattr(r, attr) for r in rows) / len(rows) if rows else 0.0

    def per_request(self, attr: str) -> float:
        return sum(getattr(r, attr) for r in self.results) / len(self.results) if self.results else 0.0

    def row(self) -> dict:
        return {"setting": self.setting, "requests": len(self.results),
                "executability": round(self.rate("first_ok"), 3),
                "executability_after_feedback": round(self.rate("ok"), 3),
                "success": round(self.rate("success"), 3),
                "success_micro": round(self.rate("success", "micro"), 3),
                "success_macro": round(self.rate("success", "macro"), 3),
                "rounds_per_request": round(self.per_request("rounds"), 2),
                "tokens_per_request": round(self.per_request("tokens"), 1),
                "stopped": self.stopped}


def setting_rounds(setting: str, rounds: int) -> int:
    """The Modifier's rounds in a setting: k with feedback, else 1."""
    return rounds if SETTINGS[setting]["feedback"] else 1


def run_setting(client, setting: str, requests: Iterable[nad.Request], *, run_dir, embedder,
                rounds: int = 3, progress=None, done: Optional[dict] = None) -> SettingResult:
    """Run one setting over the requests. `client` has `chat_sync`/`reject` (the LLM client);
    `done`: results already had, by request id (`results.load_done`), kept rather than asked again;
    `progress(setting, result)` follows each new result."""
    spec = SETTINGS[setting]
    counting = CountingClient(client)
    modifier = Modifier(counting, rounds=setting_rounds(setting, rounds))
    reflector = None
    if spec["experience"]:
        reflector = Reflector(counting, ExperienceBase(run_dir, embedder, scope=f"bench:{setting}"))
    out = SettingResult(setting)
    try:
        for request in requests:
            arch_id = f"{setting}:{request.id}"
            if done and request.id in done:
                out.results.append(done[request.id])
                client.skip_recorded(arch_id)
                continue
            lessons = reflector.lessons(request.text) if reflector else []
            m = modifier.write_block(request.base_text, request.text, lessons, arch_id=arch_id)
            success, reason = False, m.error or ""
            if m.ok:
                _, outcome = nad.score(request, m.base_text)
                success, reason = outcome.ok, outcome.reason
            if reflector:
                if not m.ok or m.repaired_from is not None:
                    reflector.record_modification(m, request.text, arch_id=arch_id)
                elif not success:
                    reflector.record("failure", request.text, f"The block verified but missed the request: {reason}",
                                     block=m.base_text, arch_id=arch_id)
            tokens = counting.take().total
            out.results.append(RequestResult(request.id, request.level, m.first_ok, m.ok, success, m.rounds, tokens,
                                             reason))
            if progress:
                progress(setting, out.results[-1])
    except (RunStopped, ReplayMiss, CallFailed) as exc:
        out.stopped = str(exc)
    finally:
        if reflector:
            reflector.experiences.close()
    return out


def format_table(rows: List[dict]) -> str:
    head = ["setting", "n", "exec", "exec+fb", "success", "micro", "macro", "rounds/req", "tokens/req"]
    keys = ["setting", "requests", "executability", "executability_after_feedback", "success", "success_micro",
            "success_macro", "rounds_per_request", "tokens_per_request"]
    lines = [head] + [[str(r[k]) for k in keys] for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)
    stops = [f"{r['setting']}: stopped: {r['stopped']}" for r in rows if r.get("stopped")]
    return text + ("\n" + "\n".join(stops) if stops else "") + "\n"
