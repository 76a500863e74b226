"""Multi-fidelity promotion (``--fidelity successive-halving`` or ``hyperband``).

NADER and FairNAD train every candidate at the full budget; the strongest simple methods on NAS
benchmarks spend less: they train many candidates briefly and only the best of them longer.
This scheduler does that for any proposing strategy. The loop asks it at what budget to send a
trial (`epochs`), tells it when an architecture finished a rung (`finished`) and gets back the
architectures it promoted, which train again at the next budget.

The budgets (a *ladder* of rungs) are ``min_epochs * eta**i`` below the full budget (the
preset's epochs, or ``--epochs``), then the full budget: 12, 36, 108, 200 for min 12, eta 3 and
200 epochs. New architectures join a *bracket*, in proposal order. Successive halving: every
bracket starts eta**(rungs - 1) architectures at rung 0. Hyperband: brackets cycle through
its s = rungs-1 .. 0, bracket s starting ceil(rungs / (s + 1) * eta**s) architectures at rung
rungs-1-s. Once every member of a rung has finished (and the bracket is full), the top
max(1, m // eta) of its m members by that rung's validation accuracy (ok ones; ties to the
earlier architecture) are promoted. When the search stops for its trial count the open bracket
is closed with the members it has, so every run ends with a fully trained architecture. The
rungs and the ranking are the pruners' (`nader.search.pruners`): an objective's reports
(`arch.report`) are judged by the same rule, so there is one pruning code path.

A promoted architecture trains again from scratch at the higher budget: its schedule (cosine
decay to zero over the run's epochs) differs from the lower rung's, so that checkpoint is not a
state of the longer run. The store is the state (``fidelity_brackets`` and ``arch_rungs``, see
`nader.search.store`): a resumed search continues the same schedule, and promotions whose rung
completed just before a crash are made on the next start.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, List, Optional

from nader.runtime.errors import ConfigError
from nader.runtime.presets import get_preset

from .pruners import HyperbandPruner, SuccessiveHalvingPruner, ladder  # noqa: F401 - ladder: the rungs' budgets

METHODS = ("successive-halving", "hyperband")
FINISHED = frozenset({"ok", "diverged", "failed"})
_RULES = {"successive-halving": SuccessiveHalvingPruner, "hyperband": HyperbandPruner}


def schedule_of(config) -> Optional[SuccessiveHalvingPruner]:
    """The rule of a search configuration's rungs (a pruner with the full budget as its last rung),
    None without ``fidelity``."""
    if not config.fidelity:
        return None
    if config.fidelity not in METHODS:
        raise ConfigError(f"unknown fidelity {config.fidelity!r}; choose one of: {', '.join(METHODS)}")
    full = config.job_options().get("epochs") or get_preset(config.preset).epochs
    ladder(int(full), config.min_epochs, config.eta)  # the settings' names in its refusals (eta, min-epochs)
    return _RULES[config.fidelity](min_resource=config.min_epochs, reduction_factor=config.eta, max_resource=int(full))


class Scheduler:
    """Decides budgets and promotions from the store; keeps nothing that a resume would lose."""

    def __init__(self, schedule: SuccessiveHalvingPruner, store):
        self.schedule, self.store = schedule, store

    def epochs(self, node) -> int:
        """The budget to train `node` at: its current rung's, a new architecture joining the open bracket."""
        current = self.store.current_rung(node.arch_id)
        if current is None:
            bracket, first, _size = self._open_bracket()
            self.store.enter_rung([node.arch_id], first, bracket, self.schedule.budgets[first])
            return self.schedule.budgets[first]
        return current["epochs"]

    def finished(self, node) -> List[int]:
        """An architecture finished its rung: the ids promoted (already in the store), in id order."""
        current = self.store.current_rung(node.arch_id)
        return self._promote(current["bracket"]) if current is not None else []

    def catch_up(self) -> List[int]:
        """Promotions every complete rung is owed (a crash between a result and its promotion)."""
        return [a for b in self.store.brackets() for a in self._promote(b["bracket"])]

    def close(self) -> List[int]:
        """The search stopped for its trial count: the open bracket takes no more members."""
        for b in self.store.brackets():
            members = len(self.store.bracket_rungs(b["bracket"], b["first_rung"]))
            if 0 < members < b["size"]:
                self.store.resize_bracket(b["bracket"], members)
        return self.catch_up()

    def history(self, nodes: Iterable) -> list:
        """What the strategy was told, in order: each finished rung of each architecture as it was
        then (a resume replays it, so the strategy's state is the same as without the stop)."""
        told = []
        for node in nodes:
            for r in self.store.left_rungs(node.arch_id):
                told.append(dataclasses.replace(node, status=r["status"], valid_acc=r["valid_acc"],
                                                finished=r["finished"], rung=r["rung"]))
            if node.status in FINISHED:
                told.append(node)
        return sorted(told, key=lambda n: (n.finished or 0, n.arch_id, n.rung))

    # ------------------------------------------------------------------ internals
    def _open_bracket(self) -> tuple:
        brackets = self.store.brackets()
        if brackets:
            last = brackets[-1]
            if len(self.store.bracket_rungs(last["bracket"], last["first_rung"])) < last["size"]:
                return last["bracket"], last["first_rung"], last["size"]
        index = brackets[-1]["bracket"] + 1 if brackets else 0
        first, size = self.schedule.shape(index)
        self.store.add_bracket(index, first, size)
        return index, first, size

    def _promote(self, bracket: int) -> List[int]:
        """Promote from the lowest complete rung of the bracket whose next rung is still empty."""
        info = next(b for b in self.store.brackets() if b["bracket"] == bracket)
        members = self.store.bracket_rungs(bracket, info["first_rung"])
        if len(members) < info["size"]:
            return []
        for rung in range(info["first_rung"], self.schedule.top):
            if not members or any(m["status"] not in FINISHED for m in members):
                return []
            above = self.store.bracket_rungs(bracket, rung + 1)
            if above:
                members = above
                continue
            scored = [(m["arch_id"], m["valid_acc"]) for m in members if m["status"] == "ok" and m["valid_acc"] is not None]
            chosen = sorted(self.schedule.kept(scored, entrants=len(members)))
            if chosen:
                self.store.promote(chosen, rung, rung + 1, bracket, self.schedule.budgets[rung + 1])
            return chosen
        return []


def scheduler_of(config, store) -> Optional[Scheduler]:
    schedule = schedule_of(config)
    return Scheduler(schedule, store) if schedule is not None else None
