"""Exceptions of the LLM layer. Every one carries a message meant for the user.

`RunStopped` and its subclasses end a search cleanly: the search loop catches `RunStopped`,
keeps what it has and exits; the same command run again resumes (raising a cap first when the
cap stopped it). `CallFailed` and `RequestRejected` are one call's failure: they count toward the
circuit breaker, and a caller that can go on without that reply (a search's proposal, a paper)
goes on. The other errors are failures to report.
"""
from __future__ import annotations


class LLMError(Exception):
    """Base class: a readable, expected failure (no traceback is shown for these)."""


class LLMConfigError(LLMError):
    """The [llm] configuration is missing or wrong (no endpoint, bad value, no price for a capped model)."""


class RequestRejected(LLMError):
    """The endpoint refused the request itself (400, 401, 403, 404, 422): retrying cannot help."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class CallFailed(LLMError):
    """One call failed after its retries or its deadline (429, 5xx, timeouts, broken replies)."""


class ReplayMiss(LLMError):
    """Replay mode met a call that the recorded run never made (the prompt or parameters differ)."""


class RunStopped(LLMError):
    """Base of the conditions that end a run cleanly and resumably. `reason` says what happened;
    the message adds, once, what to do (a command with its own wording uses `reason`)."""

    advice = "run again to resume"

    def __init__(self, reason: str):
        super().__init__(f"{reason}; {self.advice}")
        self.reason = reason


class BudgetExceeded(RunStopped):
    """A cap on dollars or tokens is reached (or a reply was billed above what was reserved for
    it): no further call is started."""

    advice = "raise the cap and run again to resume"

    def __init__(self, reason: str, *, kind: str, limit: float, spent: float):
        super().__init__(reason)
        self.kind = kind  # "cost" (US dollars) or "tokens"
        self.limit = limit
        self.spent = spent


class EndpointDown(RunStopped):
    """The circuit breaker opened: the endpoint failed too many calls in a row."""

    advice = "run again to resume once the endpoint answers"
