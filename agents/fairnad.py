"""FairNAD's role (the FairNAD paper, section 4.3): what the LLM is asked at each stage and the
feedback loop a candidate goes through.

* plans (prompt `fairnad_plan.v1`): a fair idea (`fair_idea`: a main category of the attribute
  tree uniformly, then one of its ideas), a Pareto-aware refinement (scale up or tune), or an
  iterative step that shows the LLM the parent's last change, its canonical diff and whether it
  raised accuracy;
* the feedback loop (`FairNAD.write`): **execution** (the Modifier with the compiler's
  diagnostics, at most `repairs` repair rounds) and **structure** (`structure_problem`: the
  canonical diff against the parent is non-empty and the network stays multi-layer). Budget
  feedback is the search's width fit, not an LLM call.

The search strategy (`nader.search.strategies.fairnad`) owns the schedule of rounds and stages
and the choice of parents; this module never sees the tree.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from nader.compiler.architecture import Architecture, load_architecture
from nader.compiler.passes.diff import block_diff, render_text
from nader.dsl.ops import Group

from .knowledge import ATTRIBUTE_TREE
from .prompts import render

PLAN_PROMPT = "fairnad_plan.v1"
SUMMARY_CHARS = 300  # a change as the next iterative step quotes it
PARTS = ("base", "stem", "downsample")


class NoIdea(RuntimeError):
    """The knowledge base has no idea to draw."""


def fair_idea(kb, rng):
    """FairNAD's fair idea sampling: a main category of the attribute tree uniformly among those
    the knowledge base has ideas for, then one of its ideas uniformly (untagged ideas are never
    drawn)."""
    idea = kb.sample(rng, by="main_category")
    if idea is None:
        raise NoIdea("the knowledge base has no idea tagged with a main category "
                     "(read papers into it with `nader-search read`, or `nader-search kb import`)")
    return idea


def render_plan(**variables) -> str:
    """The plan `fairnad_plan.v1` words for a stage ("fair", "upscale", "tune", "iterate")."""
    defaults = dict(idea="", granularity=None, tree={}, previous="", diff="", improved=False, parent_acc=0.0,
                    grandparent_acc=0.0)
    return render(PLAN_PROMPT, **{**defaults, **variables})[-1]["content"]


def idea_plan(kb, rng) -> tuple[str, dict]:
    """Stage I (and a chain's first step): a fair idea's plan and what to record about it."""
    idea = fair_idea(kb, rng)
    about = {"idea": idea.text, "idea_id": idea.id, "main_category": idea.main_category,
             "granularity": idea.granularity, "summary": f"the idea '{idea.text}'"[:SUMMARY_CHARS]}
    return render_plan(stage="fair", idea=idea.text, granularity=idea.granularity, pick=rng.random()), about


def refinement_plan(upscale: bool, rng) -> tuple[str, dict]:
    """Stage II: scale the parent up (under the budget's threshold) or tune its hyper-parameters."""
    kind = "upscale" if upscale else "tune"
    plan = render_plan(stage=kind, pick=rng.random())
    return plan, {"refinement": kind, "summary": f"the refinement '{plan}'"[:SUMMARY_CHARS]}


def iterate_plan(parent, grand, previous: str, skeleton: str) -> tuple[str, dict]:
    """Stage III's follow-up step: the parent's last change (`previous`), the canonical diff of its
    base block from the grandparent's and whether it raised accuracy. `parent` and `grand` have
    `arch_id`, `text` and `score`."""
    a = load_architecture(grand.text, skeleton).block("base")
    b = load_architecture(parent.text, skeleton).block("base")
    diff = render_text(block_diff(a, b), f"#{grand.arch_id}", f"#{parent.arch_id}")
    plan = render_plan(stage="iterate", pick=0.0, tree=ATTRIBUTE_TREE, previous=previous, diff=diff.strip(),
                       improved=parent.score > grand.score, parent_acc=parent.score, grandparent_acc=grand.score)
    summary = f"a follow-up (#{parent.arch_id}) of: {previous}"[:SUMMARY_CHARS]
    return plan, {"iterated_from": parent.arch_id, "summary": summary}


def weighted_depth(block) -> int:
    """The most weighted layers (Conv2d, Linear: learnable, not normalisation) on one path from the
    block's input to its output; 0 when the output does not depend on any of them."""
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


def structure_problem(parent_text: str, child_text: str, skeleton: str, depths: Sequence[int], *,
                      child: Optional[Architecture] = None) -> Optional[str]:
    """FairNAD's structural verification in our language, or None when the child passes.

    * modified: the canonical diff (`nadc diff`) of at least one block against the parent's
      block of the same role is non-empty; renumbering or reordering lines is no change;
    * multi-layer: the network stacks at least two weighted layers in sequence through its base
      stages: the base block has a path from input to output through a weighted layer (Conv2d or
      Linear), and the skeleton repeats it (the stages' depths) at least twice in all. A base
      block made of identities, pooling and activations alone collapses every stage.

    `child`: the child's Architecture where the caller has it (the Modifier's), not loaded again.
    """
    parent = load_architecture(parent_text, skeleton)
    child = child if child is not None else load_architecture(child_text, skeleton)
    if all(block_diff(parent.block(p), child.block(p)).equal for p in PARTS):
        return "structure: the canonical diff against the parent is empty (no operation, parameter or edge changed)"
    per_block = weighted_depth(child.block("base"))
    if per_block == 0:
        return "structure: the base block has no weighted layer (Conv2d or Linear) between its input and its output"
    if per_block * sum(depths) < 2:
        return (f"structure: the network stacks {per_block * sum(depths)} weighted layer in its base stages; "
                f"a multi-layer network needs at least 2")
    return None


@dataclass
class Written:
    """A candidate through the feedback loop: its text, or the error and the check that refused it."""

    text: Optional[str]
    error: Optional[str] = None
    feedback: Optional[str] = None  # "execution" or "structure" when refused
    arch: Optional[Architecture] = field(default=None, repr=False)  # the text's, checked (Modification.architecture)


class FairNAD:
    """The feedback loop of one search: the Modifier (execution feedback), then the structure check."""

    def __init__(self, modifier, *, skeleton: str, depths: Sequence[int]):
        self.modifier, self.skeleton, self.depths = modifier, skeleton, list(depths)

    def write(self, parent_text: str, plan: str, *, arch_id: Optional[str], progress: dict) -> Written:
        """The parent rewritten to follow the plan; `progress` gets the Modifier's rounds as they end."""
        m = self.modifier.modify(parent_text, plan, arch_id=arch_id, reject_unchanged=False)
        progress.update(rounds=m.rounds, repairs=max(0, len(m.attempts) - 1), first_ok=m.first_ok,
                        **({"repair": m.repair} if m.repair else {}),
                        **({"suggested": m.suggested} if m.suggested else {}))
        if not m.ok:
            return Written(None, m.error, "execution")
        problem = structure_problem(parent_text, m.arch_text, self.skeleton, self.depths, child=m.architecture)
        if problem:
            return Written(None, problem, "structure")
        return Written(m.arch_text, arch=m.architecture)
