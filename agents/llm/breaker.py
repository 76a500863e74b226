"""The circuit breaker: after N failed calls in a row the endpoint is taken as down.

A failed call is one that used up its retries or its deadline, or that the endpoint rejected
(a bad key or model name fails every call alike). Once open, the breaker stays
open for the client's life: every further call raises EndpointDown at once, without touching
the network, so the search stops cleanly instead of spending hours on back-off. Running the
command again (with the endpoint back) resumes the run.
"""
from __future__ import annotations

import threading

from .errors import EndpointDown


class CircuitBreaker:
    def __init__(self, threshold: int):
        self.threshold = threshold
        self.consecutive_failures = 0
        self.opened_because: str | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        if self.opened_because is not None:
            raise EndpointDown(self.opened_because)

    def success(self) -> None:
        with self._lock:
            self.consecutive_failures = 0

    def failure(self, base_url: str, error: str) -> EndpointDown | None:
        """Count a failed call; returns the EndpointDown to raise when this failure opens the breaker."""
        with self._lock:
            self.consecutive_failures += 1
            if self.opened_because is None and self.consecutive_failures >= self.threshold:
                self.opened_because = (
                    f"endpoint {base_url} down: {self.consecutive_failures} calls failed in a row"
                    f" (last: {error})")
                return EndpointDown(self.opened_because)
            return None
