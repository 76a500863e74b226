"""The run-directory lock, here for the search's own modules; it lives in `nader.runtime.lock`
because `nader-search eval` (the runtime) takes it too."""
from __future__ import annotations

from nader.runtime.lock import LOCK_NAME, RunLock, RunLocked

__all__ = ["LOCK_NAME", "RunLock", "RunLocked"]
