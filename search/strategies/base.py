"""The strategy interface: how a search chooses what to try next.

A strategy looks like an Optuna sampler: a small object the loop asks for work and tells about
results. The loop owns everything else (checking, deduplication, the budget, training, the
store, stopping), so a strategy is a few dozen lines::

    class MyStrategy(Strategy):
        name = "mine"
        summary = "one line for `--help` and the docs"
        options = {"k": Option(int, 3, "how many ...")}

        def ask(self, tree, rng):          # the parent to modify next (a Node), or None to wait
            ...
        def propose(self, parent, rng):    # a Candidate from the parent (default: a mutation),
            ...                            # or None: nothing more from this parent for now
        def tell(self, node):              # a node was evaluated (ok, diverged or failed)
            ...

The loop calls ``ask`` whenever a worker is free, then ``propose`` until it has one valid
candidate (K with ``--prescreen K``), at most four times per wanted candidate; rejected ones
(invalid, duplicate, over budget) are recorded too. ``rng`` is a ``random.Random`` seeded from
the run's seed and the id the next architecture will get, so the same seed gives the same
proposals. ``tell`` is called for every
evaluated node in finishing order, including, on resume, every node evaluated before: a strategy
rebuilds its state from ``tell`` alone and keeps nothing else between runs.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Optional

from nader.runtime.errors import ConfigError

from ..tree import Node, Tree


@dataclass
class Candidate:
    """What a strategy proposes: an architecture's whole text and how it was made.

    ``text`` is None when nothing could be produced (no mutation applies, an LLM reply held no
    block); ``error`` then says why and the loop records an invalid architecture. ``tokens_in``,
    ``tokens_out`` and ``cost_usd`` are what producing it cost (LLM strategies), recorded on the
    architecture and counted against ``--max-cost`` / ``--max-tokens``.
    """

    text: Optional[str]
    origin: str = "mutation"
    operator: Optional[str] = None
    change: Dict[str, Any] = field(default_factory=dict)
    error: Optional[str] = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Option:
    type: type
    default: Any
    help: str
    minimum: Optional[float] = None
    choices: Optional[tuple] = None

    def parse(self, name: str, value: Any) -> Any:
        try:
            if self.type is bool and isinstance(value, str):
                if value.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError
                out = value.lower() in ("1", "true", "yes", "on")
            elif self.type is int and (isinstance(value, bool) or (isinstance(value, float) and not value.is_integer())):
                raise ValueError
            else:
                out = self.type(value)
        except (TypeError, ValueError):
            raise ConfigError(f"option {name}: expected {self.type.__name__}, got {value!r}") from None
        if self.minimum is not None and out < self.minimum:
            raise ConfigError(f"option {name}: must be at least {self.minimum:g}, got {out!r}")
        if self.choices is not None and out not in self.choices:
            raise ConfigError(f"option {name}: choose one of {', '.join(map(str, self.choices))}, got {out!r}")
        return out


def mutation_candidate(parent: Node, rng: random.Random) -> Candidate:
    """The offline proposer: one graph-rewrite mutation of the parent (`nader.compiler.mutate`)."""
    from nader.compiler.mutate import CannotApply, MutationError, mutate

    try:
        m = mutate(parent.text, rng)
    except CannotApply as exc:
        return Candidate(None, operator=None, error=str(exc))
    except MutationError as exc:
        return Candidate(None, operator=None, error=str(exc))
    return Candidate(m.arch_text, operator=m.operator, change={"operator": m.operator, "args": m.args})


class Strategy:
    name: ClassVar[str] = "base"
    summary: ClassVar[str] = ""
    options: ClassVar[Dict[str, Option]] = {}
    # Options that may change between the sessions of one run (where an endpoint is, say).
    session_options: ClassVar[frozenset] = frozenset()
    space = None  # the search space (`nader.search.spaces.space`), set by the loop

    def __init__(self, **options):
        self.settings = self.resolve_options(options)

    @classmethod
    def resolve_options(cls, given: Optional[dict]) -> dict:
        """Every option with its default filled in, checked; unknown names are refused."""
        given = {str(k).replace("-", "_"): v for k, v in (given or {}).items()}
        unknown = sorted(set(given) - set(cls.options))
        if unknown:
            known = ", ".join(cls.options) or "none"
            raise ConfigError(f"strategy {cls.name} has no option {', '.join(unknown)} (its options: {known})")
        return {k: (opt.parse(k, given[k]) if k in given else opt.default) for k, opt in cls.options.items()}

    def ask(self, tree: Tree, rng: random.Random) -> Optional[Node]:
        raise NotImplementedError

    def propose(self, parent: Node, rng: random.Random) -> Optional[Candidate]:
        if self.space is not None:  # the search space's mutation (a graph rewrite in the language)
            return self.space.mutate(parent, rng)
        return mutation_candidate(parent, rng)

    def tell(self, node: Node) -> None:
        pass
