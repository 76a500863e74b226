"""The Reader: papers in, design ideas tagged with FairNAD's attribute tree into the knowledge base.

NADER's steps (Algorithm 1), with FairNAD's tagging:
1. relevance: is the paper about backbone block design? (title and abstract; `reader_relevance.v1`)
2. extraction: design ideas from the method section (`reader_extract.v1`)
3. tagging: granularity, main category and sub-category of each idea (`reader_tag.v1`)

Replies are parsed strictly (one JSON object, checked field by field). A reply that fails is
sent back once with the error (`reply_retry.v1`); a second failure marks the paper failed.
A paper already in the knowledge base is skipped before any call, and papers judged irrelevant
are recorded there too, so reading the same papers again costs nothing.
Where the model's profile gives its context length, the method section is cut further to fit it
beside the prompt and the reply (`agents.context_fit`), with a marker saying so.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from ..context_fit import client_room, cut_text, fit_conversation
from ..llm import CallFailed, LLMClient, ReplayMiss, RequestRejected, RunStopped
from ..llm.jsonreply import ReplyFormatError, parse_json_object
from ..prompts import render
from .papers import Paper

MAX_METHOD_CHARS = 30_000   # about 8k tokens of method section per extraction call, whatever the context
MAX_IDEAS = 8
MAX_IDEA_WORDS = 60         # the prompt asks for 50; a little slack before refusing


class StepFailed(Exception):
    """A step's reply stayed unusable after its one retry."""


@dataclass
class PaperOutcome:
    paper_id: str
    title: str
    source: str
    status: str                 # added | known | irrelevant | no ideas | failed | stopped
    ideas_found: int = 0
    ideas_added: int = 0        # new in the knowledge base (the rest merged into near-duplicates)
    reason: Optional[str] = None  # the relevance judgement's reason, or why the paper failed
    ideas: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"paper_id": self.paper_id, "title": self.title, "source": self.source, "status": self.status,
                "ideas_found": self.ideas_found, "ideas_added": self.ideas_added, "reason": self.reason,
                "ideas": self.ideas}


# ---------------------------------------------------------------------- reply checks
def _string(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ReplyFormatError(f"{what} must be a non-empty string")
    return " ".join(value.split())


def check_relevance(reply: dict) -> tuple[bool, str]:
    if set(reply) != {"relevant", "reason"}:
        raise ReplyFormatError('the object must have exactly the keys "relevant" and "reason"')
    if not isinstance(reply["relevant"], bool):
        raise ReplyFormatError('"relevant" must be true or false')
    return reply["relevant"], _string(reply["reason"], '"reason"')


def check_ideas(reply: dict, max_ideas: int = MAX_IDEAS) -> list[str]:
    if set(reply) != {"ideas"} or not isinstance(reply["ideas"], list):
        raise ReplyFormatError('the object must have exactly one key, "ideas", holding a list of strings')
    ideas = [_string(idea, f"idea {i}") for i, idea in enumerate(reply["ideas"], 1)]
    if len(ideas) > max_ideas:
        raise ReplyFormatError(f"{len(ideas)} ideas given; give at most {max_ideas}")
    for i, idea in enumerate(ideas, 1):
        if len(idea.split()) > MAX_IDEA_WORDS:
            raise ReplyFormatError(f"idea {i} has {len(idea.split())} words; keep each idea to 50 words")
    return ideas


def check_tag_reply(reply: dict, count: int, tree: dict) -> list[tuple[str, str, Optional[str]]]:
    if set(reply) != {"tags"} or not isinstance(reply["tags"], list):
        raise ReplyFormatError('the object must have exactly one key, "tags", holding a list')
    tags = reply["tags"]
    if len(tags) != count:
        raise ReplyFormatError(f"{len(tags)} tags given for {count} ideas; give one tag per idea, in order")
    found = []
    for n, tag in enumerate(tags, 1):
        if not isinstance(tag, dict) or tag.get("idea") != n:
            raise ReplyFormatError(f'tag {n} must be an object with "idea": {n}')
        granularity, main, sub = tag.get("granularity"), tag.get("main_category"), tag.get("sub_category")
        if granularity not in tree:
            raise ReplyFormatError(f"tag {n}: granularity {granularity!r} is not one of: {', '.join(tree)}")
        if main not in tree[granularity]:
            raise ReplyFormatError(f"tag {n}: {main!r} is not a main category of {granularity!r};"
                                   f" one of: {', '.join(tree[granularity])}")
        subs = tree[granularity][main]
        if sub is not None and sub not in subs:
            raise ReplyFormatError(f"tag {n}: {sub!r} is not a sub-category of {main!r};"
                                   f" one of: {', '.join(subs) or 'none (use null)'}, or null")
        found.append((granularity, main, sub))
    return found


# ---------------------------------------------------------------------- the agent
class Reader:
    """Reads papers into a knowledge base with one LLM client.

    `kb` needs `has_source(paper_id)`, `add_source(paper_id, title, relevant)` and
    `add_ideas([Idea...]) -> int`; `make_idea(text, paper_id, granularity, main, sub)` builds
    the knowledge base's idea records.
    """

    def __init__(self, client: LLMClient, kb, *, tree: dict, make_idea: Callable[..., Any],
                 max_method_chars: int = MAX_METHOD_CHARS, max_ideas: int = MAX_IDEAS):
        self.client = client
        self.kb = kb
        self.tree = tree
        self.make_idea = make_idea
        self.max_method_chars = max_method_chars
        self.max_ideas = max_ideas

    async def _ask(self, prompt: str, variables: dict, check: Callable[[dict], Any], paper_id: str):
        first = messages = render(prompt, **variables)
        role = "reader." + prompt.split("_", 1)[1].split(".")[0]
        for attempt in (1, 2):
            reply = await self.client.chat(messages, role=role, prompt=prompt, json=True, arch_id=None)
            try:
                return check(parse_json_object(reply.text, truncated=reply.truncated))
            except ReplyFormatError as exc:
                self.client.reject(reply, str(exc))
                if attempt == 2:
                    raise StepFailed(f"{prompt}: the reply stayed unusable after one retry: {exc}") from None
                messages = fit_conversation(self.client, first, [{"role": "assistant", "content": reply.text},
                                                                 *render("reply_retry.v1", error=str(exc))[-1:]])

    def _extract_variables(self, paper: Paper) -> dict:
        """The extraction prompt's variables, the method section cut to fit the model's context."""
        variables = {"title": paper.title, "method": "", "tree": self.tree, "max_ideas": self.max_ideas}
        room = client_room(self.client, render("reader_extract.v1", **variables), converse=True)
        method = paper.method[:self.max_method_chars]
        variables["method"] = method if room is None else cut_text(method, room)
        return variables

    async def read(self, paper: Paper) -> PaperOutcome:
        outcome = PaperOutcome(paper.paper_id, paper.title, paper.source, "failed")
        if self.kb.has_source(paper.paper_id):
            outcome.status = "known"
            return outcome
        try:
            relevant, outcome.reason = await self._ask(
                "reader_relevance.v1", {"title": paper.title, "abstract": paper.abstract or "(no abstract)"},
                check_relevance, paper.paper_id)
            if not relevant:
                self.kb.add_source(paper.paper_id, title=paper.title, relevant=False)
                outcome.status = "irrelevant"
                return outcome
            ideas = await self._ask("reader_extract.v1", self._extract_variables(paper),
                                    lambda r: check_ideas(r, self.max_ideas), paper.paper_id)
            outcome.ideas_found = len(ideas)
            if ideas:
                tags = await self._ask("reader_tag.v1", {"ideas": ideas, "tree": self.tree},
                                       lambda r: check_tag_reply(r, len(ideas), self.tree), paper.paper_id)
                records = [self.make_idea(text, paper.paper_id, *tag) for text, tag in zip(ideas, tags)]
                outcome.ideas = [{"text": t, "granularity": g, "main_category": m, "sub_category": s}
                                 for t, (g, m, s) in zip(ideas, tags)]
                outcome.ideas_added = self.kb.add_ideas(records)
            self.kb.add_source(paper.paper_id, title=paper.title, relevant=True)
            outcome.status = "added" if ideas else "no ideas"
        except StepFailed as exc:
            outcome.reason = str(exc)
        return outcome

    async def read_all(self, papers: Iterable[Paper], on_done: Optional[Callable[[PaperOutcome], None]] = None
                       ) -> tuple[list[PaperOutcome], Optional[Exception]]:
        """Read papers concurrently (the client bounds the calls in flight).

        Returns the outcomes in input order and the condition that stopped the run, if any: a cap,
        the endpoint down (RunStopped) or a replay miss. A paper whose call failed is marked failed
        and the others go on; papers not finished when the run stopped are marked stopped.
        `on_done(outcome)` follows each paper (a progress display).
        """
        gate = asyncio.Semaphore(max(1, self.client.config.max_concurrency))
        stopped: list[Exception] = []

        async def one(paper: Paper) -> PaperOutcome:
            outcome = await attempt(paper)
            if on_done is not None:
                on_done(outcome)
            return outcome

        async def attempt(paper: Paper) -> PaperOutcome:
            async with gate:
                try:
                    return await self.read(paper)
                except (RunStopped, ReplayMiss) as exc:
                    stopped.append(exc)
                    return PaperOutcome(paper.paper_id, paper.title, paper.source, "stopped", reason=str(exc))
                except RequestRejected as exc:
                    if exc.setup_error:  # a wrong URL, key or model: no paper can be read
                        stopped.append(exc)
                        return PaperOutcome(paper.paper_id, paper.title, paper.source, "stopped", reason=str(exc))
                    return PaperOutcome(paper.paper_id, paper.title, paper.source, "failed", reason=str(exc))
                except CallFailed as exc:
                    return PaperOutcome(paper.paper_id, paper.title, paper.source, "failed", reason=str(exc))

        outcomes = list(await asyncio.gather(*(one(p) for p in papers)))
        return outcomes, (stopped[0] if stopped else None)
