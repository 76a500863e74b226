"""The event loop that serves the client's synchronous calls (`chat_sync`, `embed_sync`): one
daemon thread per client, started on the first call.

A call interrupted in the calling thread (Ctrl-C, or SIGTERM, which the commands turn into the
same KeyboardInterrupt) cancels the loop's tasks and waits for them before the interrupt goes on,
so no "Task exception was never retrieved" or "Task was destroyed but it is pending!" is printed
at exit; what the call had recorded stays, and a resume asks again.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Optional

CANCEL_WAIT_S = 10.0  # how long an interrupted call's tasks get to end (a socket close, at most)


class SyncLoop:
    def __init__(self, name: str = "nader-llm"):
        self.name = name
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def run(self, coroutine):
        """The coroutine's result, run on the loop's thread (started on first use)."""
        with self._lock:
            if self._thread is None:
                self.loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self.loop.run_forever, name=self.name, daemon=True)
                self._thread.start()
            loop = self.loop
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            asyncio.run_coroutine_threadsafe(_cancel_tasks(), loop).result(timeout=CANCEL_WAIT_S)
            raise

    @property
    def started(self) -> bool:
        return self._thread is not None

    def close(self, last=None) -> None:
        """Run `last` (a coroutine: closing connections) on the loop, then stop its thread."""
        if self._thread is None:
            if last is not None:
                last.close()
            return
        if last is not None:
            asyncio.run_coroutine_threadsafe(last, self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
        self._thread = self.loop = None


async def _cancel_tasks() -> None:
    """Cancel every other task of the running loop and wait for them, their exceptions retrieved."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
