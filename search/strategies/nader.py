"""`nader`: NADER's team of LLM agents as a search strategy.

* `ask`: the parent-selection policy picks the parent (NADER's DFS/BFS mix by default).
* `propose`: the Proposer turns the knowledge base's ideas into a plan for the parent (ideas
  already applied to it are left out), the Modifier writes the block with the compiler's
  feedback and the Reflector's lessons, and the Reflector records a failure or a repair.
* `tell`: the Reflector records the trained architecture: a success, or a training failure
  (out of memory, divergence, a crash, accuracy below the parent's). On resume every finished
  architecture is told again; one already in the experience base is skipped, so nothing is
  reflected twice.

The ablation switches are options: `reader=false` (ideas drawn at random), `ranking=false`,
`feedback=false` (one round), `experience=false`. A call that fails after its retries, or a reply
that raises anywhere in its handling, makes a rejected proposal with the reason; the loop goes
on (the client's breaker stops the run after repeated failures). The LLM client is the project's one client:
its calls are recorded in the run's `runs.sqlite` (`llm_calls`, with role and architecture), so
a resumed search answers repeated calls from the record. Each architecture's `change` holds the
plan, the idea, the Modifier's rounds and the tokens by agent; its `tokens_in`/`tokens_out`/
`cost_usd` hold what producing it cost (the Reflector's later lesson is added when told).
"""
from __future__ import annotations

from typing import Optional

from nader.agents.llm.errors import CallFailed, ReplayMiss, RequestRejected, RunStopped
from nader.agents.modifier import Modifier
from nader.agents.proposer import NoIdeas, Proposer
from nader.agents.experiences import ExperienceBase
from nader.agents.reflector import Reflector
from nader.compiler.block_text import split_architecture

from ..candidate import Candidate
from ..selection import POLICIES
from .base import Strategy
from .catalog import DECLARED, LLM_SESSION_OPTIONS
from .llm import LLMTeam, proposal_failure, repair_change


class NaderStrategy(Strategy):
    name = "nader"
    summary, options = DECLARED[name]
    session_options = LLM_SESSION_OPTIONS
    block_repairs = True  # `--repair`: the compiler repairs the Modifier's blocks (default auto)

    def __init__(self, **options):
        super().__init__(**options)
        self.tree = None
        self._agents = None
        self._stopped = None  # a clean stop met while told a result, raised at the next ask

    @property
    def network(self) -> tuple:
        """(skeleton, dataset): the Modifier checks an architecture on the search's own network and sizes."""
        return self.context.skeleton, self.context.dataset

    def _team(self):
        if self._agents is None:
            self._agents = _Team(self.settings, self.context.run_dir, *self.network, caps=self.context.llm_caps,
                                 repair=self.context.repair)
        return self._agents

    def close(self) -> None:
        if self._agents is not None:
            self._agents.close()
            self._agents = None

    # ------------------------------------------------------------------ the interface
    def ask(self, tree, rng):
        if self._stopped is not None:
            raise self._stopped
        self.tree = tree
        s = self.settings
        if s["selection"] == "nader":
            return POLICIES["nader"](tree, rng, dfs=s["dfs"], width=s["width"])
        return POLICIES[s["selection"]](tree, rng)

    def propose(self, parent, rng) -> Candidate:
        team = self._team()  # outside the guard: a configuration error stops the run
        change: dict = {}
        try:
            return self._propose(team, parent, rng, change)
        except Exception as exc:  # a failed call or a reply that raised: a rejected proposal
            return self._candidate(None, change, error=proposal_failure(exc))

    def _propose(self, team, parent, rng, change: dict) -> Candidate:
        """The agents' proposal; `change` is filled as it goes, so a failure keeps what was decided."""
        arch_id = str(self.tree.next_id) if self.tree is not None else None
        base_text = split_architecture(parent.text)[0]
        try:
            plan = team.proposer.propose(base_text, history=self._history(parent), applied=self._applied(parent),
                                         rng=rng, arch_id=arch_id)
        except NoIdeas as exc:
            return self._candidate(None, change, error=str(exc))
        change.update(plan=plan.plan, idea=plan.idea, idea_id=plan.idea_id)
        lessons = team.reflector.lessons(plan.plan) if team.reflector else []
        m = team.modifier.modify(parent.text, plan.plan, lessons, arch_id=arch_id)
        change.update(rounds=m.rounds, first_ok=m.first_ok, **repair_change(m))
        if team.reflector is not None:
            try:
                team.reflector.record_modification(m, plan.plan, arch_id=arch_id, parent_id=parent.arch_id)
            except (CallFailed, RequestRejected):
                pass  # an embeddings call failed: the candidate stands, without its experience
        return self._candidate(m.arch_text if m.ok else None, change, error=m.error, arch=m.architecture)

    def tell(self, node, rng) -> None:
        team = self._team()
        plan = (node.change or {}).get("plan")
        if team.reflector is None or not plan or team.reflector.experiences.has_training(node.arch_id):
            return
        parent = self.tree[node.parent_id] if self.tree is not None and node.parent_id in self.tree.nodes else None
        try:
            team.reflector.record_training(plan, status=node.status, valid_acc=node.valid_acc,
                                           parent_acc=parent.valid_acc if parent is not None else None,
                                           block=None, arch_id=node.arch_id, parent_id=node.parent_id)
        except (RunStopped, ReplayMiss) as exc:
            # No experience is recorded, so a resumed run reflects on it again; the loop stops at the next ask.
            self._stopped = self._stopped or exc
        except (CallFailed, RequestRejected):
            pass  # an embeddings call failed (the breaker counted it): a later session reflects again
        spent = team.counting.take()
        if spent.total:  # the lesson's tokens go on the told architecture (the loop books them)
            self.context.add_usage(node.arch_id, spent.prompt_tokens, spent.completion_tokens, spent.cost_usd)

    # ------------------------------------------------------------------ helpers
    def _candidate(self, text: Optional[str], change: dict, error: Optional[str] = None, arch=None) -> Candidate:
        spent = self._team().counting.take()
        change = {**change, "tokens": spent.by_role}
        return Candidate(text, origin="llm", operator="nader", change=change, error=error,
                         tokens_in=spent.prompt_tokens, tokens_out=spent.completion_tokens, cost_usd=spent.cost_usd,
                         arch=arch)

    def _history(self, node) -> list:
        """The plans on the path from the root to `node`, oldest first."""
        plans = []
        while node is not None:
            plan = (node.change or {}).get("plan")
            if plan:
                plans.append(plan)
            node = self.tree[node.parent_id] if node.parent_id is not None and self.tree else None
        return plans[::-1]

    def _applied(self, parent) -> set:
        """Ideas already tried on this parent (by any child, valid or not)."""
        return {c.change.get("idea_id") for c in self.tree.kids(parent.arch_id) if c.change} - {None}


class _Team(LLMTeam):
    """The agents of one search, sharing one LLM client and the run's database."""

    def __init__(self, s: dict, run_dir, skeleton: str, dataset: str, caps: dict | None = None, repair: str = "off"):
        super().__init__(s, run_dir, "nader", caps,
                         kb_help="--option kb=DIR (fill one with `nader-search read PAPERS --kb DIR`)")
        self.proposer = Proposer(self.counting, self.kb, candidates=s["candidates"], use_reader=s["reader"],
                                 rank=s["ranking"])
        self.modifier = Modifier(self.counting, rounds=s["rounds"] if s["feedback"] else 1, skeleton=skeleton,
                                 dataset=dataset, repair=repair)
        self.reflector = None
        if s["experience"]:
            self.reflector = Reflector(self.counting, ExperienceBase(run_dir, self.kb.embedder))

    def close(self) -> None:
        if self.reflector is not None:
            self.reflector.experiences.close()
        super().close()
