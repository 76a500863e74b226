"""Work shared out to forked children that pull items from a queue, each sending its results back
through a pipe.

Lighter than multiprocessing.Pool, whose import, start and shutdown cost about 30 ms (a tenth
of a whole `nadc verify` over 1,000 files): a fork costs about a millisecond, the children start
with everything the parent imported, and the parent works through the queue beside them.
Pulling, rather than dealing out equal shares, keeps every process busy to the end when items
differ in cost or a core is shared with another job.
"""
from __future__ import annotations

import os
import pickle
import signal
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Bytes of one queue record (an item's index). A pipe's reads of whole records are atomic.
_RECORD = 4
#: Records the queue holds: all are written before the first fork, so they must fit the pipe's
#: buffer (64 KiB on Linux, 16 KiB on macOS) with room to spare.
MAX_ITEMS = 2048


class WorkerFailed(RuntimeError):
    """A child raised, or died before sending its result."""


def map_forked(function: Callable[[T], R], items: Sequence[T], processes: int) -> list[R]:
    """`[function(item) for item in items]`, computed by this process and `processes - 1` forked
    children, each taking the next item from a shared queue until none is left.

    Results must pickle. An exception in a child is raised here as WorkerFailed with its text.
    """
    if not items:
        return []
    if len(items) > MAX_ITEMS:
        raise ValueError(f"map_forked takes at most {MAX_ITEMS} items, not {len(items)}")
    queue_read, queue_write = os.pipe()
    os.write(queue_write, b"".join(k.to_bytes(_RECORD, "little") for k in range(len(items))))
    os.close(queue_write)  # readers see the end of the queue once it is empty
    children: list[tuple[int, int]] = []
    try:
        for _ in range(min(processes, len(items)) - 1):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_end)
                _run_child(function, items, queue_read, write_end)  # never returns
            os.close(write_end)
            children.append((pid, read_end))
        results = dict(_pull(function, items, queue_read))
        while children:
            results.update(_collect(*children.pop(0)))
        return [results[k] for k in range(len(items))]
    finally:
        os.close(queue_read)
        for pid, read_end in children:  # only after an error: stop the rest
            os.close(read_end)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _pull(function, items, queue: int) -> list[tuple[int, object]]:
    """(index, result) of each item this process takes from the queue, until it is empty."""
    done = []
    while record := os.read(queue, _RECORD):
        k = int.from_bytes(record, "little")
        done.append((k, function(items[k])))
    return done


def _run_child(function, items, queue: int, write_end: int) -> None:
    status = 0
    try:
        try:
            payload = pickle.dumps((True, _pull(function, items, queue)))
        except BaseException as error:  # noqa: BLE001 - reported by the parent
            payload = pickle.dumps((False, f"{type(error).__name__}: {error}"))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
    except BaseException:  # noqa: BLE001 - the parent sees the missing result
        status = 1
    finally:
        os._exit(status)  # no atexit handlers, no flushing of the parent's buffers


def _collect(pid: int, read_end: int):
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise WorkerFailed(f"worker process {pid} ended without a result (status {status})")
    done, value = pickle.loads(data)
    if not done:
        raise WorkerFailed(f"worker process {pid} failed: {value}")
    return value
