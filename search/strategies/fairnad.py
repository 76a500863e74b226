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
is discarded and the loop asks for a new candidate, as in the paper.

The schedule position is a function of the tree (how many architectures were sent to training),
so a resumed search continues the round and stage where it stopped; each architecture's
`change` records its round, stage and slot. The strategy keeps nothing between runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nader.runtime.errors import ConfigError

from ..selection.pareto import select_pareto
from ..selection.topk import ranked
from ..tree import PENDING, TRIALS, Node, Tree
from .base import Candidate, Option, Strategy
from .llm import LLM_OPTIONS, LLM_SESSION_OPTIONS, open_client_and_kb

PLAN_PROMPT = "fairnad_plan.v1"
SUMMARY_CHARS = 300  # a change as the next iterative step quotes it
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


def weighted_depth(block) -> int:
    """The most weighted layers (Conv2d, Linear: learnable, not normalisation) on one path from the
    block's input to its output; 0 when the output does not depend on any of them."""
    from nader.dsl.ops import Group

    layers = Group.LEARNABLE - Group.NORMALIZATION
    order = block.topological_order() or []
    nodes = block.node_map()
    best: dict = {}
    for nid in order:
        node = nodes[nid]
        preds = [best[p] for p in block.inputs_of(nid) if p in best]
        if node.op in Group.SOURCE:
            best[nid] = 0
        elif preds:
            best[nid] = max(preds) + (1 if node.op in layers else 0)
    sink = next((nid for nid in order if nodes[nid].op in Group.SINK), None)
    return best.get(sink, 0)


def structure_problem(parent_text: str, child_text: str, skeleton: str, depths) -> Optional[str]:
    """FairNAD's structural verification in our language, or None when the child passes.

    * modified: the canonical diff (`nadc diff`) of at least one block against the parent's
      block of the same role is non-empty; renumbering or reordering lines is no change;
    * multi-layer: the network stacks at least two weighted layers in sequence through its base
      stages: the base block has a path from input to output through a weighted layer (Conv2d or
      Linear), and the skeleton repeats it (the stages' depths) at least twice in all. A base
      block made of identities, pooling and activations alone collapses every stage.
    """
    from nader.compiler.network import load_architecture
    from nader.compiler.passes.diff import block_diff

    from ..checks import PARTS

    parent, child = load_architecture(parent_text, skeleton), load_architecture(child_text, skeleton)
    if all(block_diff(parent.block(p), child.block(p)).equal for p in PARTS):
        return "structure: the canonical diff against the parent is empty (no operation, parameter or edge changed)"
    per_block = weighted_depth(child.block("base"))
    if per_block == 0:
        return "structure: the base block has no weighted layer (Conv2d or Linear) between its input and its output"
    if per_block * sum(depths) < 2:
        return (f"structure: the network stacks {per_block * sum(depths)} weighted layer in its base stages; "
                f"a multi-layer network needs at least 2")
    return None


class FairNADStrategy(Strategy):
    name = "fairnad"
    summary = "FairNAD: fair idea mutation, Pareto-aware refinement, iterative LLM mutation; compiler feedback"
    options = {
        "kb": Option(str, "", "knowledge base directory with tagged ideas (filled by `nader-search read`)"),
        "fair": Option(int, 8, "stage I: architectures per round (fair ideas on the top-k parents)", minimum=0),
        "pareto": Option(int, 8, "stage II: architectures per round (Pareto-aware refinement)", minimum=0),
        "iterative": Option(int, 4, "stage III: architectures per round (iterative LLM mutation)", minimum=0),
        "steps": Option(int, 2, "stage III: successive LLM edits per chain (d)", minimum=1),
        "threshold": Option(float, 0.9, "stage II: scale up below this fraction of a budget, else tune", minimum=0.0),
        "repairs": Option(int, 2, "execution feedback: repair rounds after the first reply", minimum=0),
        **LLM_OPTIONS,
    }
    session_options = LLM_SESSION_OPTIONS

    def __init__(self, **options):
        super().__init__(**options)
        s = self.settings
        if s["fair"] + s["pareto"] + s["iterative"] == 0:
            raise ConfigError("fairnad: the stages fair, pareto and iterative cannot all be 0")
        self.run_dir = self.store = self.tree = None
        self.skeleton, self.dataset, self.depths, self.budget = "nb201", "cifar10", None, None
        self._slot: Optional[Slot] = None
        self._team = None

    # ------------------------------------------------------------------ wiring
    def bind(self, run_dir, store=None) -> None:
        """The run directory (its runs.sqlite records LLM calls) and the store (the budget, skeleton
        and depths the structure and Pareto rules use)."""
        self.run_dir, self.store = run_dir, store
        record = store.config() if store is not None else None
        if record:
            from nader.compiler.network import resolve_depths, skeleton_info

            from ..config import SearchConfig

            config = SearchConfig.from_record(record)
            self.skeleton, self.dataset = config.skeleton, config.dataset
            self.depths = list(resolve_depths(skeleton_info(config.skeleton), config.depths))
            self.budget = config.budget()
        self.team()  # a missing knowledge base or a bad endpoint setting is refused before any training

    def close(self) -> None:
        if self._team is not None:
            self._team.close()
            self._team = None

    def team(self):
        if self._team is None:
            self._team = _Team(self.settings, self.run_dir, self.skeleton, self.dataset)
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
        team = self.team()
        change = slot.as_change()
        try:
            plan, about = self._plan(slot, parent, rng)
        except _NoIdea as exc:
            return self._candidate(None, change, error=str(exc))
        change.update(about, plan=plan)
        arch_id = str(self.tree.next_id) if self.tree is not None else None
        m = team.modifier.modify(parent.text, plan, arch_id=arch_id, reject_unchanged=False)
        change.update(rounds=m.rounds, repairs=max(0, len(m.attempts) - 1), first_ok=m.first_ok)
        if not m.ok:
            change["feedback"] = "execution"
            return self._candidate(None, change, error=m.error)
        problem = structure_problem(parent.text, m.arch_text, self.skeleton, self._depths())
        if problem:
            change["feedback"] = "structure"
            return self._candidate(None, change, error=problem)
        return self._candidate(m.arch_text, change)

    # ------------------------------------------------------------------ plans
    def _plan(self, slot: Slot, parent: Node, rng) -> tuple[str, dict]:
        from nader.agents.prompts import render

        if slot.stage == "II":
            kind = "upscale" if self.under_budget(parent) else "tune"
            plan = _render(render, stage=kind, pick=rng.random())
            return plan, {"refinement": kind, "summary": f"the refinement '{plan}'"[:SUMMARY_CHARS]}
        if slot.stage == "III":
            grand = self.tree[parent.parent_id] if parent.parent_id is not None else None
            previous = (parent.change or {}).get("summary")
            if grand is not None and grand.score is not None and previous and parent.score is not None:
                summary = f"a follow-up (#{parent.arch_id}) of: {previous}"[:SUMMARY_CHARS]
                return self._iterate_plan(render, parent, grand, previous), {"iterated_from": parent.arch_id,
                                                                             "summary": summary}
            # The root has no change to build on: the chain starts with a fair idea.
        idea = self.fair_idea(rng)
        about = {"idea": idea.text, "idea_id": idea.id, "main_category": idea.main_category,
                 "granularity": idea.granularity, "summary": f"the idea '{idea.text}'"[:SUMMARY_CHARS]}
        return _render(render, stage="fair", idea=idea.text, granularity=idea.granularity, pick=rng.random()), about

    def fair_idea(self, rng):
        return fair_idea(self.team().kb, rng)

    def _iterate_plan(self, render, parent: Node, grand: Node, previous: str) -> str:
        from nader.agents.knowledge import ATTRIBUTE_TREE
        from nader.compiler.network import load_architecture
        from nader.compiler.passes.diff import block_diff, render_text

        a = load_architecture(grand.text, self.skeleton).block("base")
        b = load_architecture(parent.text, self.skeleton).block("base")
        diff = render_text(block_diff(a, b), f"#{grand.arch_id}", f"#{parent.arch_id}")
        return _render(render, stage="iterate", pick=0.0, tree=ATTRIBUTE_TREE, previous=previous, diff=diff.strip(),
                       improved=parent.score > grand.score, parent_acc=parent.score, grandparent_acc=grand.score)

    def _depths(self) -> list:
        if self.depths is None:  # not bound to a run: the skeleton's default depths
            from nader.compiler.network import resolve_depths, skeleton_info

            self.depths = list(resolve_depths(skeleton_info(self.skeleton), None))
        return self.depths

    def under_budget(self, node: Node) -> bool:
        """FairNAD's rule: some budgeted cost of the node is below `threshold` of its limit."""
        if self.budget is None:
            return True
        t = self.settings["threshold"]
        costs = ((node.params, self.budget.params), (node.flops, self.budget.flops))
        return any(limit and cost is not None and cost < t * limit for cost, limit in costs)

    # ------------------------------------------------------------------ helpers
    def _chain_node(self, tree: Tree, rnd: int, chain: int, step: int) -> Optional[Node]:
        found = [n for n in tree if n.status in TRIALS and n.change.get("stage") == "III"
                 and n.change.get("round") == rnd and n.change.get("chain") == chain and n.change.get("step") == step]
        return found[-1] if found else None

    def _candidate(self, text: Optional[str], change: dict, error: Optional[str] = None) -> Candidate:
        spent = self.team().counting.take()
        change = {**change, "tokens": spent.by_role}
        return Candidate(text, origin="llm", operator=f"fairnad/{change['stage']}", change=change, error=error,
                         tokens_in=spent.prompt_tokens, tokens_out=spent.completion_tokens, cost_usd=spent.cost_usd)


class _NoIdea(RuntimeError):
    pass


def fair_idea(kb, rng):
    """FairNAD's fair idea sampling: a main category of the attribute tree uniformly among those
    the knowledge base has ideas for, then one of its ideas uniformly (untagged ideas are never
    drawn)."""
    idea = kb.sample(rng, by="main_category")
    if idea is None:
        raise _NoIdea("the knowledge base has no idea tagged with a main category "
                      "(read papers into it with `nader-search read`, or `nader-search kb import`)")
    return idea


def _render(render, **variables) -> str:
    defaults = dict(idea="", granularity=None, tree={}, previous="", diff="", improved=False, parent_acc=0.0,
                    grandparent_acc=0.0)
    return render(PLAN_PROMPT, **{**defaults, **variables})[-1]["content"]


class _Team:
    """The LLM client, the knowledge base and the Modifier of one search."""

    def __init__(self, s: dict, run_dir, skeleton: str, dataset: str):
        from nader.agents.modifier import Modifier
        from nader.agents.tokens import CountingClient

        self.client, self.kb = open_client_and_kb(
            s, run_dir, "fairnad", "--kb DIR of tagged ideas (fill one with `nader-search read PAPERS --kb DIR` "
                                   "or `nader-search kb import`)")
        self.counting = CountingClient(self.client)
        self.modifier = Modifier(self.counting, rounds=s["repairs"] + 1, skeleton=skeleton, dataset=dataset)

    def close(self) -> None:
        self.kb.close()
        self.client.close()
