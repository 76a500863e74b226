"""The Proposer: from a parent block and the knowledge base to one concrete modification plan.

The parent is chosen by the search's parent-selection policy (NADER's by default; see the
`nader` strategy). For that parent the Proposer

1. describes it (the plans that led to it and the operations it uses) and retrieves the
   knowledge base's ideas most similar to that description (`--no-reader`: ideas drawn at
   random from the knowledge base instead), leaving out ideas already applied to this parent;
2. asks the LLM (`proposer_plan.v1`) to rank the candidates and write one plan for the best
   (`--no-proposer-ranking`: the first candidate is taken and only the plan is asked for).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, List, Optional

from nader.dsl.parser import parse

from .context_fit import client_room, fit_conversation, latest_that_fit
from .llm.jsonreply import ReplyFormatError, parse_json_object
from .prompts import render

PROMPT = "proposer_plan.v1"
CANDIDATES = 5
MAX_PLAN_WORDS = 120


class NoIdeas(RuntimeError):
    """The knowledge base has no idea left to propose for this parent."""


@dataclass
class Proposal:
    """The Proposer's answer: the idea it chose for the parent and its plan of the change."""

    idea_id: int
    idea: str
    plan: str
    ranking: List[int] = field(default_factory=list)  # idea ids, best first (empty without ranking)
    prompt_tokens: int = 0
    completion_tokens: int = 0


def describe(block_text: str, history: Iterable[str] = ()) -> str:
    """The text an idea is matched against: the parent's history and the operations it uses."""
    blocks = parse(block_text).program.blocks
    ops = Counter(n.op_name for n in blocks[0].nodes) if blocks else Counter()
    used = ", ".join(f"{op}" + (f" x{k}" if k > 1 else "") for op, k in sorted(ops.items())
                     if op not in ("input", "output"))
    parts = [*history, f"a convolutional block using {used}" if used else "a convolutional block"]
    return "; ".join(parts)


def check_plan(reply: dict, numbers: List[int], rank: bool) -> tuple[int, str, List[int]]:
    idea = reply.get("idea")
    if not isinstance(idea, int) or idea not in numbers:
        raise ReplyFormatError(f'"idea" must be one of the candidate numbers {numbers}')
    plan = reply.get("plan")
    if not isinstance(plan, str) or not plan.strip():
        raise ReplyFormatError('"plan" must be a non-empty string')
    ranking = reply.get("ranking", []) if rank else []
    if rank and (not isinstance(ranking, list) or not all(isinstance(n, int) and n in numbers for n in ranking)):
        raise ReplyFormatError(f'"ranking" must list candidate numbers from {numbers}')
    return idea, " ".join(plan.split()[:MAX_PLAN_WORDS]), ranking


class Proposer:
    def __init__(self, client, kb, *, candidates: int = CANDIDATES, use_reader: bool = True, rank: bool = True):
        self.client = client
        self.kb = kb
        self.candidates = candidates
        self.use_reader = use_reader
        self.rank = rank

    def candidate_ideas(self, block_text: str, history: List[str], applied: set, rng) -> list:
        """Ideas for this parent (not yet applied to it): the most similar, or drawn at random."""
        want = self.candidates if self.rank else 1
        if self.use_reader:
            found = self.kb.search(describe(block_text, history), k=want + len(applied))
            ideas = [idea for idea, _ in found if idea.id not in applied][:want]
        else:
            ideas, seen = [], set(applied)
            for _ in range(8 * want):
                idea = self.kb.sample(rng, by=None)
                if idea is None:
                    break
                if idea.id not in seen:
                    seen.add(idea.id)
                    ideas.append(idea)
                if len(ideas) == want:
                    break
        if not ideas:
            raise NoIdeas("the knowledge base has no idea left for this parent "
                          "(read papers into it with `nader-search read`)")
        return ideas

    def propose(self, block_text: str, *, history: List[str] = (), applied: Iterable[int] = (), rng=None,
                arch_id: Optional[str] = None) -> Proposal:
        ideas = self.candidate_ideas(block_text, list(history), set(applied), rng)
        shown = [{"n": i + 1, "text": idea.text} for i, idea in enumerate(ideas)]
        numbers = [s["n"] for s in shown]
        rank = self.rank and len(ideas) > 1
        room = client_room(self.client, render(PROMPT, block=block_text.strip(), history=[], ideas=shown, rank=rank),
                           converse=True)
        first = messages = render(PROMPT, block=block_text.strip(), history=latest_that_fit(list(history), room), ideas=shown,
                          rank=rank)
        tokens = [0, 0]
        for attempt in (1, 2):
            reply = self.client.chat_sync(messages, role="proposer", prompt=PROMPT, json=True, arch_id=arch_id)
            tokens[0] += reply.prompt_tokens or 0
            tokens[1] += reply.completion_tokens or 0
            try:
                n, plan, ranking = check_plan(parse_json_object(reply.text, truncated=reply.truncated), numbers, rank)
                break
            except ReplyFormatError as exc:
                self.client.reject(reply, str(exc))
                if attempt == 2:
                    # The retrieval stands on its own: apply the first candidate as the plan.
                    n, plan, ranking = numbers[0], ideas[0].text, []
                    break
                messages = fit_conversation(self.client, first, [{"role": "assistant", "content": reply.text},
                                                                 *render("reply_retry.v1", error=str(exc))[-1:]])
        chosen = ideas[n - 1]
        return Proposal(chosen.id, chosen.text, plan, [ideas[k - 1].id for k in ranking], tokens[0], tokens[1])
