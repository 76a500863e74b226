"""Exceptions of the LLM layer. Every one carries a message meant for the user.

`RunStopped` and its subclasses end a search cleanly: the search loop catches `RunStopped`,
keeps what it has and exits; the same command run again resumes (raising a cap first when the
cap stopped it). `CallFailed` and `RequestRejected` are one call's failure: they count toward the
circuit breaker, and a caller that can go on without that reply (a search's proposal, a paper)
goes on. The other errors are failures to report.

The ones a search ends on cleanly say so by the stop protocol the search loop reads (it never
imports these types): `stop_code` (the stop reason recorded; None for the others),
`stop_reason` (what happened) and `stop_advice` ("raise-cap" or "run-again": what to do next).
"""
from __future__ import annotations


class LLMError(Exception):
    """Base class: a readable, expected failure (no traceback is shown for these)."""

    stop_code: str | None = None  # not a stop: the search reports it as an error
    stop_advice = "run-again"

    @property
    def stop_reason(self) -> str:
        return str(self)


class LLMConfigError(LLMError):
    """The [llm] configuration is missing or wrong (no endpoint, bad value, no price for a capped model)."""


class RequestRejected(LLMError):
    """The endpoint refused the request itself (400, 401, 403, 404, 422): retrying cannot help."""

    stop_code = "llm-stopped"  # where a strategy did not absorb it

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status

    @property
    def setup_error(self) -> bool:
        """A wrong URL, key or model (401, 403, 404): every call of the run fails alike, so a
        command ends on it as on a configuration error (exit 2)."""
        return self.status in (401, 403, 404)


class CallFailed(LLMError):
    """One call failed after its retries or its deadline (429, 5xx, timeouts, broken replies)."""

    stop_code = "llm-stopped"  # where a strategy did not absorb it


class ReplayMiss(LLMError):
    """Replay mode met a call that the recorded run never made (the prompt or parameters differ)."""

    stop_code = "llm-stopped"


class RunStopped(LLMError):
    """Base of the conditions that end a run cleanly and resumably. `reason` says what happened;
    the message adds, once, what to do (a command with its own wording uses `reason`)."""

    advice = "run again to resume"
    stop_code = "llm-stopped"

    def __init__(self, reason: str):
        super().__init__(f"{reason}; {self.advice}")
        self.reason = reason

    @property
    def stop_reason(self) -> str:
        return self.reason


class BudgetExceeded(RunStopped):
    """A cap on dollars or tokens is reached (or a reply was billed above what was reserved for
    it): no further call is started."""

    advice = "raise the cap and run again to resume"
    stop_advice = "raise-cap"

    def __init__(self, reason: str, *, kind: str, limit: float, spent: float):
        super().__init__(reason)
        self.kind = kind  # "cost" (US dollars) or "tokens"
        self.limit = limit
        self.spent = spent

    @property
    def stop_code(self) -> str:
        return "token-limit" if self.kind == "tokens" else "cost-limit"


class EndpointDown(RunStopped):
    """The circuit breaker opened: the endpoint failed too many calls in a row."""

    advice = "run again to resume once the endpoint answers"
