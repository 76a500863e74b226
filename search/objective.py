"""What an objective function receives and what becomes of its return: `Arch`, `TrialPruned`,
and `ObjectiveCall`, the one call a worker (a thread, a process, a Ray task) makes.

This module is what a worker process or Ray task imports to run an objective, so it stays light:
no torch (`Arch.module` imports the compiler's network builder when called) and no store. An
`ObjectiveCall` returns a plain dict (`status`, `values`, `test_acc`, `step`, `user_attrs`,
`error`, `seconds`) and never raises for the objective's failure: the study's driver, the one
writer, turns it into the recorded outcome.

While it runs, the objective talks to the driver through a *channel* (`channel.ask(message)`,
answered by the driver): `arch.report(value, step)` sends the value, and the reply (the study's
pruner's decision, `nader.search.pruners`) is what `arch.should_prune()` answers until the next
report.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from .weights import save_weights

COUNTED = ("params", "flops")  # objectives the compiler counts: the objective function may leave them out
TEST_ACC = "test_acc"  # a returned dict's key that fills the test-accuracy column (reported, never optimised)
#: what `set_user_attr` keeps: keys per architecture, a key's length, a value's JSON size
MAX_USER_ATTRS, MAX_KEY_CHARS, MAX_VALUE_BYTES = 64, 64, 4096


class TrialPruned(Exception):
    """Raise it from an objective when `arch.should_prune()` says so (Optuna's `TrialPruned`): the
    trial is recorded as `pruned`, with the last value it reported."""


def user_attr(key: Any, value: Any) -> Any:
    """`value` as stored (JSON: None, bool, numbers, text, lists, dicts), or ValueError with the
    bound it passes: a key is text of 1..64 characters, a value at most 4 KiB of JSON, finite."""
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_CHARS or not key.isprintable():
        raise ValueError(f"set_user_attr: the key must be printable text of 1 to {MAX_KEY_CHARS} characters, "
                         f"not {key!r:.80}")
    try:
        text = json.dumps(value, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"set_user_attr({key!r}): the value must be JSON (numbers finite, dict keys text): "
                         f"{exc}") from None
    if len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise ValueError(f"set_user_attr({key!r}): {len(text.encode('utf-8')):,} bytes of JSON is too large "
                         f"(at most {MAX_VALUE_BYTES:,})")
    return json.loads(text)


@dataclass
class Arch:
    """What an objective function receives: one architecture to evaluate, with what rebuilds it,
    and the trial's hooks: `report`, `should_prune`, `set_user_attr`, `save_weights`."""

    number: int  # the architecture's id in the run (0 is the root)
    text: str  # the whole architecture (.nad)
    skeleton: str
    dataset: str
    depths: List[int]
    widths: Optional[List[int]]
    params: Optional[int]
    flops: Optional[int]
    seed: int  # the seed this evaluation is for (one call per seed)
    cell: Optional[str] = None  # a NAS-Bench-201 cell string (`--space nb201`), else None
    epochs: Optional[int] = None  # a multi-fidelity rung's epochs; None: the configured budget
    run_dir: Optional[Path] = None  # the study's run directory, where save_weights writes
    _channel: Any = field(default=None, init=False, repr=False, compare=False)
    _last: Optional[tuple] = field(default=None, init=False, repr=False, compare=False)  # (step, value) reported
    _prune: bool = field(default=False, init=False, repr=False, compare=False)
    _attrs: Dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def module(self):
        """The torch network built for the skeleton, dataset, depths and fitted widths."""
        from nader.compiler.network import build_network  # torch: only where a network is built

        return build_network(self.text, self.skeleton, self.dataset, widths=self.widths, depths=self.depths)[0]

    def save_weights(self, module, *, mean=None, std=None) -> Path:
        """Hand over the trained network (or its state_dict) of this evaluation, for `best --emit
        --weights` and `Study.export(..., weights=True)`; `mean` and `std` (per input channel) state
        the normalisation it was fed. `RUN/checkpoints/arch-N-seed-S.pt` (nader.search.weights)."""
        if self.run_dir is None:
            raise ValueError("this Arch belongs to no study's run directory")
        return save_weights(self.run_dir, self.number, self.seed, module, mean=mean, std=std)

    def report(self, value: float, step: int) -> None:
        """An intermediate value of the first objective at `step` (an epoch, say): stored with the
        trial and judged by the study's pruner, whose decision `should_prune` then gives. A step
        reported again is ignored."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"report: step must be an integer of at least 0, not {step!r:.40}")
        if isinstance(value, (bool, str, bytes)) or not hasattr(value, "__float__"):
            raise ValueError(f"report: expected a number, got {value!r:.60}")
        value = float(value)
        if not math.isfinite(value):
            value = math.nan  # the worst value: the pruners stop it
        if self._last is not None and step <= self._last[0]:
            return
        self._last = (step, value)
        if self._channel is not None:
            self._prune = bool(self._channel.ask(("report", self.number, self.seed, step, value)))

    def should_prune(self) -> bool:
        """Whether the study's pruner stops this trial, judged at its last report (False without a
        pruner, or before a report): then raise `TrialPruned`."""
        return self._prune

    def set_user_attr(self, key: str, value: Any) -> None:
        """Keep `value` with the trial under `key` (JSON, bounded: `user_attr`); shown by `status`,
        `export`, `best`, `trials_dataframe` and the report. Kept even if the trial fails."""
        stored = user_attr(key, value)
        if key not in self._attrs and len(self._attrs) >= MAX_USER_ATTRS:
            raise ValueError(f"set_user_attr({key!r}): at most {MAX_USER_ATTRS} attributes per trial")
        self._attrs[key] = stored

    @property
    def user_attrs(self) -> Dict[str, Any]:
        return dict(self._attrs)


def as_values(result: Any, objectives: Sequence) -> Dict[str, float]:
    """The objective function's return as {name: value}, test_acc included when given. It returns
    one value per objective, or one per objective other than params and flops (those then come
    from the compiler), or a dict by objective name with an optional `test_acc`."""
    names = [o.name for o in objectives]
    if isinstance(result, dict):
        unknown = [k for k in result if k not in names and k != TEST_ACC]
        if unknown:
            raise ValueError(f"the objective returned {unknown[0]!r:.40}, which is not one of the study's objectives "
                             f"({', '.join(names)}) or {TEST_ACC}")
        missing = [n for n in names if n not in result and n not in COUNTED]
        if missing:
            raise ValueError(f"the objective's dict has no {missing[0]!r}")
        pairs = list(result.items())
    else:
        values = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(values) != len(names):
            names = [n for n in names if n not in COUNTED]
            if len(values) != len(names):
                raise ValueError(f"the objective returned {len(values)} value(s) for {len(objectives)} objective(s) "
                                 f"({', '.join(map(str, objectives))})")
        pairs = list(zip(names, values))
    out = {}
    for name, v in pairs:
        if isinstance(v, (bool, str, bytes)) or not hasattr(v, "__float__"):  # numpy and torch scalars pass
            raise ValueError(f"objective {name}: expected a number, got {v!r:.60}")
        out[name] = float(v)
    return out


@dataclass
class ObjectiveCall:
    """`objective(arch)` as a worker runs it: cloudpickled to a process or a Ray task (with the
    arch and the objectives' names), or called in a thread. Returns the outcome as a plain dict."""

    objective: Callable
    arch: Arch
    objectives: tuple

    def __call__(self, channel=None) -> dict:
        arch = self.arch
        arch._channel = channel
        t0 = time.perf_counter()
        try:
            out = completed(self.objective(arch), self.objectives)
        except TrialPruned:
            out = {"status": "pruned"}
        except Exception as exc:  # the user's code: a failed trial, as any evaluation failure
            out = failed(exc)
        return finished(out, arch, time.perf_counter() - t0)


def completed(result: Any, objectives: Sequence) -> dict:
    """An objective's return as a finished call's outcome: its values, and test_acc apart."""
    values = as_values(result, objectives)
    test = values.pop(TEST_ACC, None) if all(o.name != TEST_ACC for o in objectives) else None
    return {"status": "ok", "values": values, "test_acc": test}


def failed(exc: BaseException) -> dict:
    return {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:500]}


def finished(out: dict, arch: Arch, seconds: Optional[float]) -> dict:
    """The outcome with what the trial left on `arch`: its attributes and its last report."""
    step, last = arch._last if arch._last is not None else (None, None)
    return {**out, "seconds": seconds, "user_attrs": dict(arch._attrs), "step": step, "last": last}
