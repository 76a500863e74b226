"""The strategy interface: how a search chooses what to try next.

A strategy looks like an Optuna sampler: a small object the loop asks for work and tells about
results. The loop owns everything else (checking, deduplication, the budget, training, the
store, token accounting, stopping), so a strategy is a few dozen lines::

    class MyStrategy(Strategy):
        name = "mine"
        summary = "one line for `--help` and the docs"
        options = {"k": Option(int, 3, "how many ...")}

        def bind(self, context):           # the search it serves (optional; keep super's)
            ...
        def ask(self, tree, rng):          # the parent to modify next (a TreeNode), or None to wait
            ...
        def propose(self, parent, rng):    # a Candidate from the parent (default: a mutation),
            ...                            # or None: nothing more from this parent for now
        def tell(self, node, rng):         # a node was evaluated (ok, diverged or failed)
            ...
        def close(self):                   # the run is over: release clients, files (optional)
            ...

``bind`` is called once before the first ``ask`` with the run's `SearchContext` (run directory,
network, depths, budget, search space, the loop's usage callback); ``self.context`` and
``self.space`` read it. ``close`` is called once at the end, also after an error or Ctrl-C. By
default ``bind`` keeps the context and ``close`` does nothing. The loop calls ``ask`` whenever a worker is free, then ``propose``
until it has one valid candidate (K with ``--prescreen K``), at most four times per wanted
candidate; rejected ones (invalid, duplicate, over budget) are recorded too. ``tell`` is called
for every evaluated node in finishing order, including, on resume, every node evaluated before:
a strategy rebuilds its state from ``tell`` alone and keeps nothing else between runs.

Every ``rng`` is a ``random.Random`` seeded from the run's seed, what it is for and an
architecture id: ``ask`` and ``propose`` get the id the next architecture will get, ``tell`` the
told node's. So the same seed makes the same decisions, and a resumed run, told again what it
was told before, draws what the uninterrupted run drew.

A strategy stops the search with ``StopSearch(message, code)``. Exceptions from lower layers
that stand for a clean stop (the LLM client's caps, an endpoint down) carry the `StopCode`
protocol; the loop maps them through its table without knowing their types.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Dict, Optional, Tuple

from nader.runtime.errors import ConfigError

from ..candidate import Candidate, mutation_candidate
from ..objectives import DEFAULT
from ..tree import TreeNode, Tree


class StopSearch(Exception):
    """Raised by a strategy (from ask or propose) to stop the search cleanly: the loop records
    ``code`` as the stop reason, lets running trials finish and the next run resumes. A stop met
    in ``tell`` is kept and raised at the next ``ask`` (as NADER's Reflector does)."""

    def __init__(self, message: str, code: str = "stopped"):
        super().__init__(message)
        self.code = code


# What a lower layer's clean-stop exception carries (the LLM client's, `nader.agents.llm.errors`):
#   stop_code    the stop reason's code ("cost-limit", "llm-stopped", ...), None for an ordinary error;
#   stop_reason  what happened, for the user;
#   stop_advice  a key of the loop's advice table ("raise-cap", "run-again").
StopCode = Tuple[str, str, str]


def stop_code(exc: BaseException) -> Optional[StopCode]:
    """(code, reason, advice) when `exc` says it is a clean stop, else None."""
    code = getattr(exc, "stop_code", None)
    if not isinstance(code, str):
        return None
    return code, str(getattr(exc, "stop_reason", exc)), str(getattr(exc, "stop_advice", "run-again"))


def _no_usage(arch_id: int, tokens_in: int, tokens_out: int, cost_usd: float) -> None:
    pass


@dataclass(frozen=True)
class SearchContext:
    """What a strategy may know of the search it serves, given once by `bind`.

    ``add_usage(arch_id, tokens_in, tokens_out, cost_usd)`` books LLM usage spent after an
    architecture was recorded (a lesson learnt when told its result) on that architecture; the
    loop owns the store, so this is the only way in. ``llm_caps`` are the run's caps on the LLM
    client (``max_cost_usd``, ``max_total_tokens``; `--llm-max-cost`, `--llm-max-tokens`). ``repair``
    is `--repair` for the strategies that declare ``block_repairs = True`` (their LLM writes blocks).
    ``proxies`` is the run's zero-cost proxy (`nader.search.warm_start.Proxies`): ``pool``, the
    warm start's architectures ranked best first (empty without ``--warm-start``), and
    ``scores(text)``, each member proxy's score of any architecture, cached by canonical hash.
    """

    run_dir: Optional[Path] = None
    skeleton: str = "nb201"
    dataset: str = "cifar10"
    depths: Tuple[int, ...] = ()
    budget: Any = None  # nader.compiler.fit.Budget, or None (no budget)
    space: Any = None  # nader.search.spaces.space.Space
    llm_caps: Dict[str, float] = field(default_factory=dict)
    repair: str = "off"  # off | suggest | auto: the compiler's repair of LLM blocks (`--repair`)
    add_usage: Callable[[int, int, int, float], None] = _no_usage
    objectives: Tuple[Any, ...] = ()  # nader.search.objectives.Objective; () or one: validation accuracy
    proxies: Any = None  # nader.search.warm_start.Proxies: the warm start's ranked pool, proxy scores on demand


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


class Strategy:
    name: ClassVar[str] = "base"
    summary: ClassVar[str] = ""
    options: ClassVar[Dict[str, Option]] = {}
    # Options that may change between the sessions of one run (where an endpoint is, say).
    session_options: ClassVar[frozenset] = frozenset()
    # True: in a space with a uniform distribution the root is not trained by default (`--root none`),
    # so the first trials are the strategy's own, as in the published baselines.
    rootless: ClassVar[bool] = False
    # True: the strategy takes its fresh starts from `draw` (the warm start's pool, best first);
    # False: with --warm-start the loop gives it the pool's best as its first trial.
    draws_pool: ClassVar[bool] = False
    # True: the strategy reads the proxies (`SearchContext.proxies`) as features, so the run scores them
    # (and reports their cost) with or without a warm start.
    uses_proxies: ClassVar[bool] = False

    def __init__(self, **options):
        self.settings = self.resolve_options(options)
        self.context = SearchContext()

    @property
    def space(self):
        """The search space (`nader.search.spaces.space`), from the context (None until bound)."""
        return self.context.space

    @classmethod
    def resolve_options(cls, given: Optional[dict]) -> dict:
        """Every option with its default filled in, checked; unknown names are refused."""
        given = {str(k).replace("-", "_"): v for k, v in (given or {}).items()}
        unknown = sorted(set(given) - set(cls.options))
        if unknown:
            known = ", ".join(cls.options) or "none"
            raise ConfigError(f"strategy {cls.name} has no option {', '.join(unknown)} (its options: {known})")
        return {k: (opt.parse(k, given[k]) if k in given else opt.default) for k, opt in cls.options.items()}

    @property
    def objectives(self) -> tuple:
        """The search's objectives (`nader.search.objectives`); more than one: rank by non-domination."""
        return tuple(self.context.objectives) or DEFAULT

    @property
    def several(self) -> bool:
        """Whether to rank by the objectives (non-domination) rather than by validation accuracy:
        several objectives, or one that is not valid_acc:max (a Python objective's)."""
        return self.objectives != DEFAULT

    def bind(self, context: SearchContext) -> None:
        """The search this strategy serves; called once before the first ``ask``."""
        self.context = context

    def close(self) -> None:
        """The run is over (also after an error or Ctrl-C); called once."""

    def ask(self, tree: Tree, rng: random.Random) -> Optional[TreeNode]:
        raise NotImplementedError

    def propose(self, parent: TreeNode, rng: random.Random) -> Optional[Candidate]:
        if self.space is not None:  # the search space's mutation (a graph rewrite in the language)
            return self.space.mutate(parent, rng)
        return mutation_candidate(parent, rng)

    def tell(self, node: TreeNode, rng: random.Random) -> None:
        pass

    def pool_left(self, tree: Tree, seen=()) -> bool:
        """Whether the warm start's pool has an architecture not yet in the tree."""
        proxies = self.context.proxies
        return proxies is not None and proxies.next_unseen(tree, seen) is not None

    def draw(self, rng: random.Random, tree: Tree, seen=()) -> Optional[Candidate]:
        """A fresh architecture to start from: the warm start's best one not in the tree yet (its
        key not in `seen`), else a uniform draw from the space among the keys not in `seen`
        (None: the space is exhausted). A strategy that uses it sets ``draws_pool = True``."""
        proxies = self.context.proxies
        entry = proxies.next_unseen(tree, seen) if proxies is not None else None
        if entry is not None:
            return entry.candidate(proxies.spec)
        return self.space.sample(rng, seen)
