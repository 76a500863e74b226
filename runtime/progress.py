"""A tiny progress display on stderr (`--progress`): **rich** (auto on a terminal) draws one line
per running job, an epoch bar each, in place, and a line per finished job above them; **plain**
(auto elsewhere: nohup, Slurm, a pipe) writes only the line per finished job, with the elapsed
time; **off** writes nothing. No dependency.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Dict, Optional, Sequence

PROGRESS_MODES = ("auto", "rich", "plain", "off")  # --progress (options.PROGRESS)


def resolve_progress(mode: Optional[str], stream) -> str:
    """rich, plain or off: `auto` (or None) is rich when `stream` is a terminal, plain elsewhere."""
    mode = (mode or "auto").lower()
    if mode not in PROGRESS_MODES:
        raise ValueError(f"progress: expected one of {', '.join(PROGRESS_MODES)}, not {mode!r}")
    if mode == "auto":
        isatty = getattr(stream, "isatty", None)
        return "rich" if isatty and isatty() else "plain"
    return mode


class Progress:
    BAR = 20

    def __init__(self, jobs: Sequence, stream=None, enabled: Optional[bool] = None, min_interval: float = 0.0,
                 mode: Optional[str] = None):
        """`mode`: auto, rich, plain or off; the older `enabled` says rich (True) or off (False)."""
        self.stream = stream if stream is not None else sys.stderr
        if mode is None and enabled is not None:
            mode = "rich" if enabled else "off"
        self.mode = resolve_progress(mode, self.stream)
        self.enabled = self.mode == "rich"  # draws in place
        self.t0 = time.monotonic()
        self.total = len(jobs)
        self.labels: Dict[str, str] = {}
        for j in jobs:
            self.labels[j.job_id] = f"{(j.name or 'arch')[:24]} {j.dataset} seed {j.seed}"
        self.state: Dict[str, dict] = {}
        self.done = 0
        self.failed = 0
        self._lines = 0
        self._lock = threading.Lock()
        self._last = 0.0
        self.min_interval = min_interval

    # ------------------------------------------------------------------ events
    def event(self, ev: dict) -> None:
        jid = ev.get("job_id")
        if jid is None:
            return
        with self._lock:
            st = self.state.setdefault(jid, {"epoch": 0, "epochs": ev.get("epochs") or 0, "t0": time.monotonic()})
            if ev.get("type") == "start":
                st["epoch"] = ev.get("resumed_from", 0)
                st["epochs"] = ev.get("epochs", st["epochs"])
            elif ev.get("type") == "epoch":
                st["epoch"] = max(st["epoch"], int(ev.get("epoch", 0)))
                if ev.get("epochs"):
                    st["epochs"] = ev["epochs"]
                st["loss"] = ev.get("train_loss")
                st["acc"] = ev.get("train_acc")
            self._draw()

    def result(self, r) -> None:
        with self._lock:
            self.done += 1
            if r.status != "ok":
                self.failed += 1
            self.state.pop(r.job_id, None)
            if self.mode != "off":
                self._clear()
                acc = f"test {r.test_acc:.2f}%" if r.test_acc is not None else (r.error or "")[:60]
                elapsed = f" ({time.monotonic() - self.t0:.0f} s)" if self.mode == "plain" else ""
                self.stream.write(f"[{self.done}/{self.total}] {self.labels.get(r.job_id, r.job_id)}: {r.status} "
                                  f"{acc}{elapsed}\n")
                self.stream.flush()
            self._draw(force=True)

    def cached(self, r) -> None:
        with self._lock:
            self.done += 1
            if self.mode != "off":
                self._clear()
                self.stream.write(f"[{self.done}/{self.total}] {self.labels.get(r.job_id, r.job_id)}: "
                                  f"{r.status} (already in the run store)\n")
            self._draw(force=True)

    def close(self) -> None:
        with self._lock:
            if self.enabled:
                self._clear()
                self.stream.flush()

    # ------------------------------------------------------------------ drawing
    def _clear(self) -> None:
        if self._lines:
            self.stream.write(f"\x1b[{self._lines}A" + "\x1b[2K\n" * self._lines + f"\x1b[{self._lines}A")
            self._lines = 0

    def render_lines(self) -> list:
        lines = []
        for jid, st in self.state.items():
            n, k = st["epochs"] or 1, st["epoch"]
            fill = int(self.BAR * min(k, n) / n)
            bar = "#" * fill + "-" * (self.BAR - fill)
            extra = ""
            if st.get("loss") is not None:
                extra = f" loss {st['loss']:.3f} acc {st['acc']:.1f}%"
            el = time.monotonic() - st["t0"]
            lines.append(f"  {self.labels.get(jid, jid)} [{bar}] epoch {k}/{n}{extra} {el:.0f}s")
        return lines

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        self._clear()
        lines = self.render_lines()
        for line in lines:
            self.stream.write(line[:200] + "\n")
        self._lines = len(lines)
        self.stream.flush()
