"""What a running search shows on stderr: ``--progress auto|rich|plain|off``.

**rich** (auto on a terminal): a live display, redrawn in place::

    rea on digits  trials 5/8  best valid 93.21% (#4)  rejected 2  0:41
      #6 <- #2 insert-se        seed 777  epoch 2/3  loss 0.621
      #7 <- #4 add-residual     seed 777  starting

**plain** (auto off a terminal: nohup, Slurm, a pipe): one line per finished trial, in a stable
key=value form a log or a test can read (`eta` once a trial of this session has finished: its mean
time per trial times the trials left, capped by a wall-clock --time-limit)::

    trial done=5/30 id=7 status=ok valid_acc=93.21 params=1.21M flops=190.20M best=93.21 best_id=4 elapsed=0:41 eta=3:55
    trial done=6/30 id=8 status=failed error=missing-value best=93.21 best_id=4 elapsed=0:43 eta=3:49

**off**: nothing. The LLM strategies' calls (`llm`, watching every client the run makes) add
their last call's line to the live display, or one plain line per call.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Dict, Optional

from nader.agents.llm.progress import CallProgress, clock_text
from nader.runtime.numbers import human
from nader.runtime.progress import resolve_progress as resolve_mode

from .loop import Observer, SearchLoop
from .tree import FINAL, REJECTED

class _Silent:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None: ...

    def isatty(self) -> bool:
        return False


class LiveProgress(Observer):
    def __init__(self, stream=None, enabled: Optional[bool] = None, mode: Optional[str] = None):
        """`mode`: auto, rich, plain or off; the older `enabled` says rich (True) or plain (False)."""
        self.stream = stream if stream is not None else sys.stderr
        if mode is None and enabled is not None:
            mode = "rich" if enabled else "plain"
        self.mode = resolve_mode(mode, self.stream)
        self.enabled = self.mode == "rich"
        enabled = self.enabled
        self.preamble: list = []  # lines written once the search starts (a table's summary), in every mode
        self.failed_kind: Dict[int, str] = {}  # arch id -> its last failed seed's error kind
        self.finished_before = 0  # trials finished before this session: not the ETA's sample
        self.loop: Optional[SearchLoop] = None
        self.running: Dict[str, dict] = {}  # job label -> state
        self.labels: Dict[int, str] = {}
        self.rejected = 0
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._live = None
        llm_stream = _Silent() if self.mode == "off" else self.stream
        self.llm = CallProgress(stream=llm_stream, enabled=enabled, unit="trials", draw=False)

    # ------------------------------------------------------------------ observer hooks
    def started(self, loop):
        self.loop = loop
        chosen = getattr(loop.config, "chosen", None)  # what `--strategy auto` chose: one line
        for line in ([chosen] if chosen else []) + self.preamble:
            self.stream.write(line + "\n")
        self.preamble = []
        self.t0 = time.monotonic()
        self.rejected = sum(1 for n in loop.tree if n.status in REJECTED)
        self.llm.set_total(loop.config.trials, done=loop.tree.trials())
        self.finished_before = self._finished()
        if self.enabled and self._live is None:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self.stream, stderr=True, highlight=False)
            self._live = Live(self._render(), console=console, refresh_per_second=4, transient=True,
                              get_renderable=self._render)
            self._live.start()

    def recorded(self, node):
        if node.status in REJECTED:
            self.rejected += 1
        self._count_trials()

    def finished(self, node):
        self._count_trials()
        if self.mode == "plain" and self.loop is not None:
            self.stream.write(self.plain_line(node) + "\n")
            self.stream.flush()

    def _finished(self) -> int:
        return sum(1 for n in self.loop.tree if n.status in FINAL) if self.loop is not None else 0

    def plain_line(self, node) -> str:
        """One finished trial, key=value (see the module docstring)."""
        c = self.loop.config
        done = self._finished()
        parts = [f"trial done={done}/{c.trials}", f"id={node.arch_id}", f"status={node.status}"]
        if node.valid_acc is not None:
            parts.append(f"valid_acc={node.valid_acc:.2f}")
        if node.status == "ok":
            parts += [f"{k}={human(v)}" for k, v in (("params", node.params), ("flops", node.flops)) if v is not None]
        elif node.arch_id in self.failed_kind:
            parts.append(f"error={self.failed_kind[node.arch_id]}")
        best = self.loop.tree.best()
        parts += [f"best={best.valid_acc:.2f}", f"best_id={best.arch_id}"] if best else ["best=-"]
        elapsed = time.monotonic() - self.t0
        parts.append(f"elapsed={clock_text(elapsed)}")
        eta = self.eta(elapsed, done)
        if eta is not None:
            parts.append(f"eta={clock_text(eta)}")
        return " ".join(parts)

    def eta(self, elapsed: float, done: int) -> Optional[float]:
        """Seconds left: this session's mean time per finished trial times the trials left, capped
        by a wall-clock time limit; None before a trial of this session has finished."""
        c = self.loop.config
        this_session = done - self.finished_before
        if this_session <= 0:
            return None
        left = max(0, c.trials - done) * elapsed / this_session
        if c.time_limit is not None:
            left = min(left, max(0.0, c.time_limit - elapsed))
        return left

    def _count_trials(self):
        if self.loop is not None:
            self.llm.set_done(self.loop.tree.trials())

    def submitted(self, node):
        change = "root" if node.parent_id is None else f"<- #{node.parent_id} {node.operator or node.origin}"
        self.labels[node.arch_id] = f"#{node.arch_id} {change}"

    def event(self, ev):
        name = ev.get("job_id")
        if name is None:
            return
        with self._lock:
            st = self.running.setdefault(name, {"epoch": 0, "epochs": ev.get("epochs") or 0})
            if ev.get("type") == "start":
                st["epoch"] = ev.get("resumed_from", 0)
                st["epochs"] = ev.get("epochs", st["epochs"])
            elif ev.get("type") == "epoch":
                st["epoch"] = max(st["epoch"], int(ev.get("epoch", 0)))
                st["loss"] = ev.get("train_loss")

    def seed_done(self, outcome):
        if outcome.status != "ok":
            self.failed_kind[outcome.arch_id] = outcome.error_kind or outcome.status
        with self._lock:
            if outcome.job_id:
                self.running.pop(outcome.job_id, None)

    def close(self):
        if self._live is not None:
            self._live.stop()
            self._live = None
        self.llm.close()

    # ------------------------------------------------------------------ drawing
    def header(self) -> str:
        loop = self.loop
        if loop is None:
            return "starting"
        best = loop.tree.best()
        best_text = f"best valid {best.valid_acc:.2f}% (#{best.arch_id})" if best else "best valid -"
        elapsed = int(time.monotonic() - self.t0)
        c = loop.config
        return (f"{c.strategy} on {c.dataset}  trials {loop.tree.trials()}/{c.trials}  {best_text}  "
                f"rejected {self.rejected}  {elapsed // 60}:{elapsed % 60:02d}")

    def lines(self) -> list:
        loop = self.loop
        out = [self.header()]
        if self.llm.status():
            out.append("  " + self.llm.status())
        if loop is None:
            return out
        jobs = getattr(loop.evaluator, "jobs", {})
        for node in loop.tree:
            if node.status != "training":
                continue
            label = self.labels.get(node.arch_id, f"#{node.arch_id}")
            for job_id, (arch_id, seed, _name) in jobs.items():
                if arch_id != node.arch_id:
                    continue
                with self._lock:
                    st = self.running.get(job_id)
                if st is None:
                    continue
                loss = f"  loss {st['loss']:.3f}" if st.get("loss") is not None else ""
                out.append(f"  {label:<28} seed {seed}  epoch {st['epoch']}/{st['epochs'] or '?'}{loss}")
        return out

    def _render(self):
        from rich.text import Text

        try:
            self._last = "\n".join(self.lines())
        except RuntimeError:  # the loop changed the tree while this thread read it: show the last frame
            pass
        return Text(getattr(self, "_last", ""))
