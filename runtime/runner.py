"""Run a batch of jobs against a run store: skip what is finished, resume what was interrupted."""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from .executors import Executor, InProcessExecutor
from .faults import INTERRUPTED, InfrastructureError
from .integrity import StoreError
from .jobs import Job, Result
from .store import RunStore


class StoreWatcher(threading.Thread):
    """Polls the run store for newly committed epochs and forwards them as events (for executors
    that cannot stream events back, e.g. Ray)."""

    def __init__(self, run_dir, on_event, interval: float = 0.5):
        super().__init__(daemon=True, name="nader-store-watcher")
        self.run_dir, self.on_event, self.interval = run_dir, on_event, interval
        self._halt = threading.Event()
        self.since = time.time()

    def run(self):
        store = RunStore(self.run_dir, check=False)
        try:
            while not self._halt.wait(self.interval):
                for job_id, rec, t in store.epochs_since(self.since):
                    self.since = max(self.since, t)
                    self.on_event({"type": "epoch", "job_id": job_id, **rec})
        except Exception:
            pass
        finally:
            store.close()

    def stop(self):
        self._halt.set()
        self.join(timeout=5)


def evaluate(jobs: Sequence[Job], executor: Optional[Executor] = None, *, run_dir=None,
             on_result: Optional[Callable[[Result], None]] = None, on_event: Optional[Callable[[dict], None]] = None,
             on_cached: Optional[Callable[[Result], None]] = None) -> List[Result]:
    """Evaluate `jobs` with `executor` (in-process by default) and return results in job order.

    With `run_dir`, every job is recorded in the run store; jobs already finished there (status
    ok or diverged) are returned from the store and not rerun; the others run with checkpoints
    under the run directory, so an interrupted job resumes from its last finished epoch, and
    each result is committed the moment it arrives. A job interrupted by the machine (disk full,
    I/O error: see faults.py) stops the batch with InfrastructureError; the rerun resumes it.
    """
    executor = executor or InProcessExecutor()
    jobs = list(jobs)
    results = {}
    store = RunStore(run_dir) if run_dir is not None else None
    watcher = None
    try:
        todo, seen = [], set()
        if store is not None:
            store.add_jobs(jobs)
        for j in jobs:
            if j.job_id in seen:
                continue
            seen.add(j.job_id)
            r = store.finished(j.job_id) if store is not None else None
            if r is not None:
                results[j.job_id] = r
                if on_cached:
                    on_cached(r)
                continue
            todo.append(dataclasses.replace(j, run_dir=str(Path(run_dir).resolve())) if run_dir is not None else j)

        def got(r: Result) -> None:
            if r.status == INTERRUPTED:  # the machine failed, not the job: stop; a rerun resumes it
                if store is not None:
                    with contextlib.suppress(StoreError):  # the disk may well be full
                        store.put_result(r)
                raise InfrastructureError(r.error or "a job was interrupted by the machine")
            if store is not None:
                store.put_result(r)
            results[r.job_id] = r
            if on_result:
                on_result(r)

        if todo:
            if on_event and store is not None and not executor.native_events:
                watcher = StoreWatcher(run_dir, on_event)
                watcher.start()
            executor.map(todo, on_result=got, on_event=on_event if executor.native_events else None)
    finally:
        if watcher is not None:
            watcher.stop()
        if store is not None:
            store.close()
    return [results[j.job_id] for j in jobs]
