"""Training-free prescreening (`--prescreen K`): each round of the search makes K valid candidates
from the same parent, ranks them by the run's zero-cost proxy (`--proxy`, `nader.search.proxies`;
an ensemble by the mean of its members' ranks among the K), trains the best and records the
others as ``screened-out``. NADER lists zero-shot quality estimation as future work.

The scores come from the run's `Proxies` (`warm_start.py`): each candidate's network is built by
the compiler at the proxies' fixed small settings, seeded from its canonical hash, and its score is
cached by that hash, so a resumed run recomputes none.
"""
from __future__ import annotations

from typing import List, Tuple


class Prescreener:
    """Ranks one round's candidates by the run's proxy."""

    def __init__(self, proxies):
        self.proxies = proxies

    @property
    def proxy(self) -> str:
        return self.proxies.spec

    def choose(self, candidates: List[Tuple[str, str]]) -> Tuple[int, List[dict]]:
        """(the index of the best (hash, text), each candidate's record: its proxy scores and rank)."""
        order, scores = self.proxies.scorer.order(candidates)
        notes = []
        for i in range(len(candidates)):
            note = {"proxy": self.proxy, "rank": order.index(i) + 1, "scores": {n: s[i] for n, s in scores.items()}}
            if len(scores) == 1:
                note["score"] = next(iter(scores.values()))[i]
            notes.append(note)
        return order[0], notes
