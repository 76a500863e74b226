"""What a strategy proposes: a `Candidate`, an architecture's whole text and how it was made.

It stands apart from the strategy interface (`strategies/base.py`) because more than the
strategies make candidates: the search spaces (`spaces/space.py`) mutate in their own space, and
the loop (`loop.py`) checks and records them. None of them then imports the strategies package,
which lists every strategy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional


@dataclass
class Candidate:
    """What a strategy proposes: an architecture's whole text and how it was made.

    ``text`` is None when nothing could be produced (no mutation applies, an LLM reply held no
    block); ``error`` then says why and the loop records an invalid architecture. ``tokens_in``,
    ``tokens_out`` and ``cost_usd`` are what producing it cost (LLM strategies), recorded on the
    architecture and counted against ``--llm-max-cost`` / ``--llm-max-tokens``.
    """

    text: Optional[str]
    origin: str = "mutation"
    operator: Optional[str] = None
    change: Dict[str, Any] = field(default_factory=dict)
    error: Optional[str] = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
