"""What an LLM command is doing, call by call, on stderr: a slow local server must not look hung.

Attached by a CLI as the client's observer (`client.add_observer(progress)`). With stderr a
terminal, one status line is redrawn in place (rich's Live, as `search/progress.py` draws); else
one plain line per call, in a stable key=value form a log or a test can read:

    llm call=3 role=modifier source=endpoint in=812 out=143 tok/s=9.8 s=14.6 cost=$0.0000 done=2/20 eta=4:51
    llm done calls=61 in=49113 out=8641 cost=$0.0000 elapsed=12:04

`done`/`eta` appear once the command says how many units (requests, papers, trials) it has:
the ETA is the mean time of the units finished in this session times the units left.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Optional

from .client import CallEvent


def clock_text(seconds: float) -> str:
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class CallProgress:
    def __init__(self, stream=None, enabled: Optional[bool] = None, unit: str = "requests", draw: bool = True):
        """`draw=False` on a terminal: another display (the search's) shows `status()` instead."""
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.live = enabled  # a terminal: redraw one status line; else plain lines
        self.draw = draw
        self.unit = unit
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        self.cost_usd = 0.0
        self.priced = False  # some call had a price: else the cost is unknown, not $0
        self.total: Optional[int] = None
        self.done = 0
        self._done_before = 0  # units finished before this session: not the ETA's sample
        self.t0 = time.monotonic()
        self._last = "starting"
        self._lock = threading.Lock()
        self._display = None
        self._summarised = False  # the summary line is written once, however often close is called

    # ------------------------------------------------------------------ what the command tells
    def set_total(self, total: int, done: int = 0) -> None:
        """`total` units in all, `done` of them already finished (read back from a record)."""
        with self._lock:
            self.total, self.done, self._done_before = total, done, done

    def unit_done(self, count: int = 1) -> None:
        with self._lock:
            self.done += count

    def set_done(self, done: int) -> None:
        with self._lock:
            self.done = done

    def eta(self) -> Optional[float]:
        done_here = self.done - self._done_before
        if self.total is None or done_here <= 0:
            return None
        return (time.monotonic() - self.t0) / done_here * max(0, self.total - self.done)

    def status(self) -> str:
        """The last call's line, for a display that draws it (empty before the first call)."""
        return self._last if self.calls else ""

    # ------------------------------------------------------------------ the observer
    def __call__(self, event: CallEvent) -> None:
        with self._lock:
            self.calls += 1
            self.prompt_tokens += event.prompt_tokens
            self.completion_tokens += event.completion_tokens
            self.cost_usd += event.cost_usd or 0.0
            self.priced = self.priced or event.cost_usd is not None
            self._last = self.line(event)
            if self.live:
                if self.draw:
                    self._start_display()
            else:
                self.stream.write(self._last + "\n")
                self.stream.flush()

    def line(self, event: CallEvent) -> str:
        rate = ""
        if event.source == "endpoint" and event.completion_tokens and event.seconds > 0:
            rate = f" tok/s={event.completion_tokens / event.seconds:.1f}"
        parts = [f"llm call={self.calls} role={event.role} source={event.source} in={event.prompt_tokens}"
                 f" out={event.completion_tokens}{rate} s={event.seconds:.1f} cost={self.cost()}"]
        if self.total is not None:
            parts.append(f"done={self.done}/{self.total}")
            eta = self.eta()
            parts.append(f"eta={clock_text(eta)}" if eta is not None else "eta=?")
        return " ".join(parts)

    def cost(self) -> str:
        return f"${self.cost_usd:.4f}" if self.priced else "-"

    def summary(self) -> str:
        done = f" {self.unit}={self.done}/{self.total}" if self.total is not None else ""
        return (f"llm done calls={self.calls} in={self.prompt_tokens} out={self.completion_tokens}"
                f" cost={self.cost()}{done} elapsed={clock_text(time.monotonic() - self.t0)}")

    def close(self) -> None:
        """Stop the live line and write the summary line once (none when no call was made)."""
        with self._lock:
            if self._display is not None:
                self._display.stop()
                self._display = None
            if not self.calls or self._summarised:
                return
            self._summarised = True
            self.stream.write(self.summary() + "\n")
            self.stream.flush()

    # ------------------------------------------------------------------ drawing (a terminal)
    def _start_display(self) -> None:
        if self._display is not None:
            return
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self.stream, stderr=True, highlight=False)
        self._display = Live(self._render(), console=console, refresh_per_second=4, transient=True,
                             get_renderable=self._render)
        self._display.start()

    def _render(self):
        from rich.text import Text

        return Text(self._last)
