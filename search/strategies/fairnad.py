"""`fairnad`: FairNAD's multi-type mutation (the FairNAD paper, section 4.3 and Algorithm 2) on
our graph language. docs/search.md ("FairNAD") says where and why it differs from the paper.

Each round runs a fixed schedule of stages; a stage's size counts architectures sent to
training (rejected candidates are recorded but fill no slot):

* **I, fair idea mutation** (`fair`, 8): the top-k parents by validation accuracy (k = `fair`),
  each mutated with an idea drawn fairly from the knowledge base: a main category of the
  attribute tree uniformly, then an idea uniformly within it.
* **II, Pareto-aware refinement** (`pareto`, 8): parents drawn by NSGA-II's binary tournament
  on (accuracy, parameters, FLOPs), pymoo's non-dominated sorting (`selection/pareto.py`). A
  parent under `threshold` (0.9) of a budget is scaled up; otherwise its hyper-parameters are
  tuned (kernel size, stride, gates, activation). The wordings are `fairnad_plan.v1`'s.
* **III, iterative mutation** (`iterative`, 4): chains of `steps` (d = 2) successive LLM edits
  from the top parents: each step shows the LLM the parent's last change (its plan and the
  canonical diff from the grandparent) and whether it raised accuracy, and the next step edits
  the child the previous step trained.

Every candidate goes through the feedback loop on the compiler: **execution** (the Modifier's
verifier feedback, at most `repairs` = 2 repair rounds), **budget** (the search's analytic width
fit; no FLOPs-lowering LLM call) and **structure** (the canonical diff against the parent must
be non-empty and the network must stay multi-layer, `structure_problem`); a structural failure
is discarded and the loop asks for a new candidate, as in the paper. A call that fails after its
retries, or a reply that raises anywhere in its handling, makes a rejected candidate with the
reason (the client's breaker stops the run after repeated failures).

The schedule position is a function of the tree (how many architectures were sent to training),
so a resumed search continues the round and stage where it stopped; each architecture's
`change` records its round, stage and slot. The strategy keeps nothing between runs.

The plans' wording, the fair idea draw and the feedback loop are FairNAD's role
(`nader.agents.fairnad`); this module is the adapter: the schedule, the parents, the budget rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nader.agents.fairnad import FairNAD, NoIdea, idea_plan, iterate_plan, refinement_plan
from nader.agents.modifier import Modifier
from nader.compiler.skeletons import skeleton_info
from nader.compiler.plan import resolve_depths
from nader.runtime.errors import ConfigError

from ..candidate import Candidate
from ..selection.pareto import select_pareto
from ..selection.topk import ranked
from ..tree import PENDING, TRIALS, TreeNode, Tree
from .base import Strategy
from .catalog import DECLARED, LLM_SESSION_OPTIONS
from .llm import LLMTeam, proposal_failure

STAGES = ("I", "II", "III")


@dataclass(frozen=True)
class Slot:
    """A place in the schedule: round (from 1), stage, index within the stage; III: chain, step."""

    round: int
    stage: str
    index: int
    chain: Optional[int] = None
    step: Optional[int] = None

    def as_change(self) -> dict:
        out = {"round": self.round, "stage": self.stage, "slot": self.index}
        if self.stage == "III":
            out.update(chain=self.chain, step=self.step)
        return out


def schedule(position: int, fair: int, pareto: int, iterative: int, steps: int) -> Slot:
    """The slot of the `position`-th architecture after the root (0-based)."""
    per_round = fair + pareto + iterative
    rnd, k = divmod(position, per_round)
    if k < fair:
        return Slot(rnd + 1, "I", k)
    if k < fair + pareto:
        return Slot(rnd + 1, "II", k - fair)
    k -= fair + pareto
    return Slot(rnd + 1, "III", k, chain=k // steps, step=k % steps)


class FairNADStrategy(Strategy):
    name = "fairnad"
    summary, options = DECLARED[name]
    session_options = LLM_SESSION_OPTIONS
    block_repairs = True  # `--repair`: the compiler repairs the Modifier's blocks (default auto)

    def __init__(self, **options):
        super().__init__(**options)
        s = self.settings
        if s["fair"] + s["pareto"] + s["iterative"] == 0:
            raise ConfigError("fairnad: the stages fair, pareto and iterative cannot all be 0")
        self.tree = None
        self._slot: Optional[Slot] = None
        self._team = None

    # ------------------------------------------------------------------ wiring
    def bind(self, context) -> None:
        """The search (run directory for the LLM calls; budget, skeleton and depths for the
        structure and Pareto rules); a missing knowledge base or a bad endpoint setting is refused
        before any training."""
        super().bind(context)
        self.team()

    def close(self) -> None:
        if self._team is not None:
            self._team.close()
            self._team = None

    def team(self):
        if self._team is None:
            self._team = _Team(self.settings, self.context, self._depths())
        return self._team

    # ------------------------------------------------------------------ the interface
    def position(self, tree: Tree) -> int:
        """Architectures sent to training after the root: the next slot's number."""
        return sum(1 for n in tree if n.parent_id is not None and n.status in TRIALS)

    def slot(self, tree: Tree) -> Slot:
        s = self.settings
        return schedule(self.position(tree), s["fair"], s["pareto"], s["iterative"], s["steps"])

    def ask(self, tree, rng):
        self.tree = tree
        if not tree.scored():
            return None
        slot = self._slot = self.slot(tree)
        s = self.settings
        if slot.stage == "I":
            best = ranked(tree)[: s["fair"]]
            return best[slot.index % len(best)]
        if slot.stage == "II":
            return select_pareto(tree, rng)
        if slot.step == 0:
            best = ranked(tree)[: -(-s["iterative"] // s["steps"])]
            return best[slot.chain % len(best)]
        previous = self._chain_node(tree, slot.round, slot.chain, slot.step - 1)
        if previous is None:  # the previous step's record is missing (changed options): start over
            return ranked(tree)[0]
        if previous.status in PENDING:
            return None  # the next edit builds on the previous one's result
        return previous if previous.score is not None else tree[previous.parent_id]

    def propose(self, parent, rng) -> Candidate:
        slot = self._slot or self.slot(self.tree)
        team = self.team()  # outside the guard: a configuration error stops the run
        change = slot.as_change()
        try:
            try:
                plan, about = self._plan(slot, parent, rng)
            except NoIdea as exc:
                return self._candidate(None, change, error=str(exc))
            change.update(about, plan=plan)
            arch_id = str(self.tree.next_id) if self.tree is not None else None
            written = team.fairnad.write(parent.text, plan, arch_id=arch_id, progress=change)
            if written.feedback:
                change["feedback"] = written.feedback
            return self._candidate(written.text, change, error=written.error, arch=written.arch)
        except Exception as exc:  # a failed call or a reply that raised: a rejected proposal
            return self._candidate(None, change, error=proposal_failure(exc))

    # ------------------------------------------------------------------ plans
    def _plan(self, slot: Slot, parent: TreeNode, rng) -> tuple[str, dict]:
        if slot.stage == "II":
            return refinement_plan(self.under_budget(parent), rng)
        if slot.stage == "III":
            grand = self.tree[parent.parent_id] if parent.parent_id is not None else None
            previous = (parent.change or {}).get("summary")
            if grand is not None and grand.score is not None and previous and parent.score is not None:
                return iterate_plan(parent, grand, previous, self.context.skeleton)
            # The root has no change to build on: the chain starts with a fair idea.
        return idea_plan(self.team().kb, rng)

    def _depths(self) -> list:
        if self.context.depths:
            return list(self.context.depths)

        return list(resolve_depths(skeleton_info(self.context.skeleton), None))

    def under_budget(self, node: TreeNode) -> bool:
        """FairNAD's rule: some budgeted cost of the node is below `threshold` of its limit."""
        budget = self.context.budget
        if budget is None:
            return True
        t = self.settings["threshold"]
        costs = ((node.params, budget.params), (node.flops, budget.flops))
        return any(limit and cost is not None and cost < t * limit for cost, limit in costs)

    # ------------------------------------------------------------------ helpers
    def _chain_node(self, tree: Tree, rnd: int, chain: int, step: int) -> Optional[TreeNode]:
        found = [n for n in tree if n.status in TRIALS and n.change.get("stage") == "III"
                 and n.change.get("round") == rnd and n.change.get("chain") == chain and n.change.get("step") == step]
        return found[-1] if found else None

    def _candidate(self, text: Optional[str], change: dict, error: Optional[str] = None, arch=None) -> Candidate:
        spent = self.team().counting.take()
        change = {**change, "tokens": spent.by_role}
        return Candidate(text, origin="llm", operator=f"fairnad/{change['stage']}", change=change, error=error,
                         tokens_in=spent.prompt_tokens, tokens_out=spent.completion_tokens, cost_usd=spent.cost_usd,
                         arch=arch)


class _Team(LLMTeam):
    """The LLM client, the knowledge base and FairNAD's role (its Modifier) of one search."""

    def __init__(self, s: dict, context, depths: list):
        super().__init__(s, context.run_dir, "fairnad", context.llm_caps,
                         kb_help="--kb DIR of tagged ideas (fill one with `nader-search read PAPERS --kb DIR` "
                                 "or `nader-search kb import`)")
        modifier = Modifier(self.counting, rounds=s["repairs"] + 1, skeleton=context.skeleton, dataset=context.dataset,
                            repair=context.repair)
        self.fairnad = FairNAD(modifier, skeleton=context.skeleton, depths=depths)
