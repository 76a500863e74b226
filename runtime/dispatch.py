"""The executor interface: a batch ``map`` built on a job stream (:class:`Dispatch`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

from .errors import ConfigError
from .jobs import Job, Result

ResultCb = Optional[Callable[[Result], None]]
EventCb = Optional[Callable[[dict], None]]


class Dispatch:
    """A stream of jobs on an executor: submit jobs one at a time, collect results as they finish.

    ``submit(job)`` returns a ticket; ``wait(timeout)`` blocks until at least one submitted job
    has finished (or the timeout passes) and returns ``[(ticket, result), ...]``. Jobs beyond
    ``capacity`` queue. ``idle()`` is how many more jobs would start at once, so a caller that
    proposes work on demand (the search loop) keeps every worker busy. Leaving the ``with``
    block normally lets idle workers exit; leaving it with an exception (Ctrl-C) stops running
    jobs at once.
    """

    capacity: int = 1

    def __init__(self):
        self._next = 0

    def _ticket(self) -> int:
        self._next += 1
        return self._next

    def submit(self, job: Job) -> int:
        raise NotImplementedError

    def pending(self) -> int:
        """Jobs submitted and not yet returned by wait (queued or running)."""
        raise NotImplementedError

    def idle(self) -> int:
        return max(0, self.capacity - self.pending())

    def wait(self, timeout: Optional[float] = None) -> List[tuple]:
        raise NotImplementedError

    def close(self, abort: bool = False) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.close(abort=et is not None)
        return False


@dataclass
class CallFailure:
    """A call (`calls.py`: a function run by a worker) that did not return: its worker died
    (`killed`), it ran past the timeout (`timeout`), or the worker could not run it (`exception`:
    a function that did not unpickle there)."""

    kind: str
    message: str
    seconds: float = 0.0


def not_shippable(executor: str, exc: BaseException):
    """The ConfigError for a function that cannot be pickled for `executor`'s workers."""
    return ConfigError(f"the objective cannot be shipped to executor={executor!r}'s workers ({type(exc).__name__}: "
                       f"{str(exc)[:200]}): build what it holds (open files, locks, CUDA tensors) inside it, or "
                       f"use executor='thread'")


class Executor:
    name = "base"
    native_events = True

    def start(self, *, on_event: EventCb = None) -> Dispatch:
        """A :class:`Dispatch` on this executor (use it as a context manager)."""
        raise NotImplementedError

    def map(self, jobs: Sequence[Job], *, on_result: ResultCb = None, on_event: EventCb = None) -> List[Result]:
        jobs = list(jobs)
        results: List[Optional[Result]] = [None] * len(jobs)
        if not jobs:
            return []
        with self.start(on_event=on_event) as dispatch:
            index = {dispatch.submit(j): i for i, j in enumerate(jobs)}
            while dispatch.pending():
                for ticket, r in dispatch.wait():
                    results[index[ticket]] = r
                    if on_result:
                        on_result(r)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
