"""What a strategy proposes: a `Candidate`, an architecture's whole text and how it was made.

It stands apart from the strategy interface (`strategies/base.py`) because more than the
strategies make candidates: the search spaces (`spaces/space.py`) mutate in their own space (the
block language's mutation is `mutation_candidate`, here, which the strategies use too), and the
loop (`loop.py`) checks and records them. None of them then imports the strategies package, which
lists every strategy.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Dict, Optional


@dataclass
class Candidate:
    """What a strategy proposes: an architecture's whole text and how it was made.

    ``text`` is None when nothing could be produced (no mutation applies, an LLM reply held no
    block); ``error`` then says why and the loop records an invalid architecture. ``tokens_in``,
    ``tokens_out`` and ``cost_usd`` are what producing it cost (LLM strategies), recorded on the
    architecture and counted against ``--llm-max-cost`` / ``--llm-max-tokens``. ``arch`` is the
    compiler's `Architecture` of ``text`` where the strategy has checked it already (the Modifier's):
    the loop's checks take it rather than load and verify the text again.
    """

    text: Optional[str]
    origin: str = "mutation"
    operator: Optional[str] = None
    change: Dict[str, Any] = field(default_factory=dict)
    error: Optional[str] = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    arch: Any = field(default=None, repr=False, compare=False)


def mutation_candidate(parent, rng: random.Random) -> Candidate:
    """The offline proposal: one graph-rewrite mutation of the parent's text (`nader.compiler.mutate`)."""
    from nader.compiler.mutate import CannotApply, MutationError, mutate

    try:
        m = mutate(parent.text, rng)
    except (CannotApply, MutationError) as exc:
        return Candidate(None, operator=None, error=str(exc))
    return Candidate(m.arch_text, operator=m.operator, change={"operator": m.operator, "args": m.args})
