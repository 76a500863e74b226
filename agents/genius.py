"""GENIUS's role (Zheng et al., 2023): the LLM as a black-box optimiser, asked for the next
architecture from every one tried and its accuracy, at temperature 0.

This module holds what the LLM sees and what is made of its replies: the prompts (`genius_cell.v2`
for a NAS-Bench-201 cell, or `genius_cell.v3` where the model's profile is small or names a
grammar field: a rationale line and the op_list line, the cell first for a small model, with the
cell reply's grammar; `genius_block.v2` for a base block in our language), the wording of each
tried architecture's outcome (a proposal that gave nothing usable shows with the reason, so no
prompt is ever sent twice: at temperature 0 the same prompt gets the same unusable reply), the
block-language check of a reply (`block_check`), and the repair conversation: an unusable reply
goes back with the reason (`genius_repair.v1`) for at most `repairs` more replies. A reply too
long to read or one the check raises on is unusable like any other, never a run's failure. With
the model's context known, the prompt keeps the newest tried architectures that fit (saying how
many older ones were left out) and a repair that would overflow keeps the first prompt and the
latest reply and reason only (`context_fit`). The search strategy
(`nader.search.strategies.genius`) decides when to ask, builds the history from the tree and
supplies the cell check, which the cell space owns.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from nader.compiler.block_text import split_architecture, with_blocks_of
from nader.compiler.reply_checks import check_architecture, check_base_block
from nader.compiler.reply_repair import repair_reply
from nader.dsl.ops import reference_text

from .context_fit import client_room, fit_conversation, newest_that_fit
from .llm.jsonreply import reply_too_long, with_cut_off
from .llm.profiles import profile_for
from .prompts import render

ROLE = "genius"
CELL_PROMPT = "genius_cell.v2"
BOUNDED_CELL_PROMPT = "genius_cell.v3"
BLOCK_PROMPT = "genius_block.v2"
MAX_FAILURE_CHARS = 600  # of a failed proposal's reason, as the next prompts quote it
REPAIR_PROMPT = "genius_repair.v1"

# A check reads one reply: (the architecture's text, "") or (None, the reason it is unusable).
ReplyCheck = Callable[[str], Tuple[Optional[str], str]]


@dataclass
class Answer:
    """What one conversation produced: the architecture's text (None when no reply was usable)."""

    text: Optional[str]
    replies: int
    feedback: str = ""

    @property
    def error(self) -> Optional[str]:
        return None if self.text is not None else f"no usable answer after {self.replies} replies: {self.feedback}"


@dataclass(frozen=True)
class CellReply:
    """What the cell space says of its replies, for `genius_cell.v3`: its operations' descriptions
    in id order, the rationale's most words, and the reply's grammar (GBNF) given the cells tried
    (their strings), which it leaves out."""

    operations: Tuple[str, ...]
    reason_words: int
    grammar: Callable[[List[str]], str]


class Genius:
    """Asks a chat client (`chat_sync`) for the next architecture and repairs unusable replies."""

    def __init__(self, client, *, repairs: int, iterations: int, dataset: str, skeleton: str,
                 cell_reply: Optional[CellReply] = None):
        self.client, self.repairs, self.iterations = client, repairs, iterations
        self.dataset, self.skeleton, self.cell_reply = dataset, skeleton, cell_reply

    def cell_prompt(self, history: List[dict]) -> Tuple[str, dict, Optional[str]]:
        """The cell prompt, its own inputs and the grammar to send: `genius_cell.v3` where the profile
        is small (the cell first) or names a grammar field (the reply the grammar allows, every cell
        of `history` left out), else v2 and no grammar."""
        profile = profile_for(self.client)
        if self.cell_reply is None or profile is None or not (profile.small or profile.grammar != "none"):
            return CELL_PROMPT, {}, None
        c = self.cell_reply
        return BOUNDED_CELL_PROMPT, dict(operations=c.operations, cell_first=profile.small,
                                         reason_words=c.reason_words), c.grammar([h["cell"] for h in history if "cell" in h])

    def answer(self, history: List[dict], iteration: int, check: ReplyCheck, *, cells: bool,
               arch_id: Optional[str], progress: Optional[dict] = None) -> Answer:
        """One conversation. `history` holds the prompt's entries (id, result, and cell/op_list or
        block); `progress["replies"]` counts the replies as they come, so a call that raises
        midway leaves the count behind."""
        common = {"dataset": self.dataset, "iteration": iteration, "iterations": self.iterations}
        grammar = None
        if cells:
            prompt, inputs, grammar = self.cell_prompt(history)
            common.update(inputs)
        else:
            prompt = BLOCK_PROMPT
            common.update(reference=reference_text(), skeleton=self.skeleton)
        first = messages = self._fitted(prompt, history, common)
        progress = {} if progress is None else progress
        text, feedback, replies, rounds = None, "", 0, []
        for round_ in range(self.repairs + 1):
            reply = self.client.chat_sync(messages, role=ROLE, arch_id=arch_id, grammar=grammar,
                                          prompt=prompt if round_ == 0 else REPAIR_PROMPT, temperature=0)
            replies += 1
            progress["replies"] = replies
            text, feedback = checked(check, reply.text)
            if text is not None:
                break
            if round_ < self.repairs:
                rounds += [{"role": "assistant", "content": reply.text},
                           *render(REPAIR_PROMPT, feedback=with_cut_off(feedback, reply.truncated), round=round_ + 1,
                                   rounds=self.repairs)[-1:]]
                messages = fit_conversation(self.client, first, rounds)
        return Answer(text, replies, feedback)

    def _fitted(self, prompt: str, history: List[dict], common: dict) -> list[dict]:
        """The prompt with the newest history entries that fit the model's context (all of them when
        the context is unknown or they fit); the prompt says how many older ones were left out."""
        skeleton = render(prompt, history=[], **common)
        room = client_room(self.client, skeleton, converse=self.repairs > 0)
        if room is None:
            return render(prompt, history=history, **common)
        empty = _chars(skeleton)
        sizes = [_chars(render(prompt, history=[h], **common)) - empty + 4 for h in history]  # + the index
        if sum(sizes) <= room:
            return render(prompt, history=history, **common)
        kept = newest_that_fit(sizes, room)
        return render(prompt, history=history[len(history) - kept:], left_out=len(history) - kept, **common)

    def block_check(self, root_text: str, repair: str = "off", record: Optional[dict] = None) -> ReplyCheck:
        """The block language's check: the reply's base block verifies, and with the root's stem and
        reduction blocks (renamed after it) it builds a network on the skeleton. With `repair` (the
        search's `--repair`), a block that fails goes to the compiler's repair: `auto` takes the
        repaired block and puts its record in `record["repair"]`; `suggest` adds the proposed fix to
        the feedback and counts it in `record["suggested"]`."""
        record = {} if record is None else record

        def check(reply: str) -> Tuple[Optional[str], str]:
            record.pop("repair", None)
            block = check_base_block(reply)
            fixed = repair_reply(block) if not block.ok and repair != "off" else None
            if fixed is not None and repair == "auto":
                block, record["repair"] = fixed.check, fixed.record()
            if not block.ok:
                if fixed is None:
                    return None, block.feedback
                record["suggested"] = record.get("suggested", 0) + 1
                return None, f"{block.feedback}\nThe compiler's proposed fix (it verifies, but may change the " \
                             f"architecture):\n{fixed.proposal()}"
            text = with_blocks_of(block.text, root_text)
            built = check_architecture(text, self.skeleton)
            if not built.ok:
                record.pop("repair", None)
            return (text, "") if built.ok else (None, built.feedback)

        return check


def _chars(messages: List[dict]) -> int:
    return sum(len(m["content"]) for m in messages)


def checked(check: ReplyCheck, reply: str) -> Tuple[Optional[str], str]:
    """`check(reply)`; a reply too long to read or one the check raises on is unusable like any
    other (the reason goes back to the LLM, then into the record), never the run's failure."""
    too_long = reply_too_long(reply)
    if too_long:
        return None, f"- {too_long}"
    try:
        return check(reply)
    except Exception as exc:  # noqa: BLE001 - whatever the reply does to the checks is the reply's failure
        return None, f"- the reply could not be checked: {type(exc).__name__}: {str(exc)[:300]}"


def outcome(status: str, valid_acc: Optional[float], duplicate_of: Optional[int] = None,
            duplicate_acc: Optional[float] = None, failure: Optional[str] = None) -> str:
    """What became of a tried architecture, as the history shows it to the LLM (`failure`: why a
    proposal gave nothing usable)."""
    if status == "ok" and valid_acc is not None:
        return f"validation accuracy {valid_acc:.2f}%"
    if status == "duplicate":
        acc = f" (validation accuracy {duplicate_acc:.2f}%)" if duplicate_acc is not None else ""
        return f"already tried as experiment #{duplicate_of}{acc}; not evaluated again"
    if status == "invalid" and failure:
        return f"invalid, not evaluated: {failure_text(failure)}"
    if status in ("invalid", "over-budget"):
        return f"{status}, not evaluated"
    if status == "diverged":
        return "training diverged"
    if status == "failed":
        return "could not be evaluated"
    return status


def failure_text(reason: str) -> str:
    """A failed proposal's reason, bounded, as a proposal's record keeps it and the prompts quote it."""
    reason = reason.strip()
    return reason if len(reason) <= MAX_FAILURE_CHARS else reason[:MAX_FAILURE_CHARS - 3] + "..."


def base_block(arch_text: str) -> str:
    """An architecture's base block as the history quotes it (the whole text when it has no roles)."""
    try:
        return split_architecture(arch_text)[0].strip()
    except ValueError:
        return arch_text.strip()
