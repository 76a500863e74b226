"""The live view of a running search (stderr, only when it is a terminal).

    rea on digits  trials 5/8  best valid 93.21% (#4)  rejected 2  0:41
      #6 <- #2 insert-se        seed 777  epoch 2/3  loss 0.621
      #7 <- #4 add-residual     seed 777  starting

Drawn with rich's Live display. The LLM strategies' calls (`llm`, watching every client the run
makes) add their last call's line there, or write one plain line per call when stderr is not a
terminal (nothing else is written then).
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Dict, Optional

from nader.agents.llm.progress import CallProgress

from .loop import Observer, SearchLoop
from .tree import REJECTED


class LiveProgress(Observer):
    def __init__(self, stream=None, enabled: Optional[bool] = None):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.loop: Optional[SearchLoop] = None
        self.running: Dict[str, dict] = {}  # job label -> state
        self.labels: Dict[int, str] = {}
        self.rejected = 0
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._live = None
        self.llm = CallProgress(stream=self.stream, enabled=enabled, unit="trials", draw=False)

    # ------------------------------------------------------------------ observer hooks
    def started(self, loop):
        self.loop = loop
        self.t0 = time.monotonic()
        self.rejected = sum(1 for n in loop.tree if n.status in REJECTED)
        self.llm.set_total(loop.config.trials, done=loop.tree.trials())
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
