"""The Reflector: an experience base of the Modifier's outcomes, with one lesson each.

Records (`experiences.ExperienceBase`: table `experiences` in the run's `RUN/runs.sqlite`,
created on first use):

| kind | when | detail |
|---|---|---|
| `failure` | the Modifier's block never verified | the compiler's diagnostics of the last reply |
| `repair` | a failing first reply was fixed by feedback | the diff from the failing to the fixed block |
| `success` | the architecture trained | accuracy change against the parent |
| `training-failure` | out of memory, divergence, a crash, or accuracy below the parent's | the error or the drop |

Each record is keyed by the embedding of its plan (the knowledge base's embedder, so lessons
and ideas live in one vector space); `retrieve(plan)` returns the lessons of the 5 records whose
plans are most similar. After each outcome the `reflector_lesson.v1` prompt writes the lesson,
a tip of at most 50 words (longer replies are cut at 50 words). With the model's context known,
the plan, the detail and the block are cut together to fit it, each text saying where it was cut.
"""
from __future__ import annotations

import difflib
from typing import List, Optional

from .context_fit import client_room, cut_texts, fit_conversation
from .experiences import TOP_K, ExperienceBase
from .llm.errors import CallFailed, RequestRejected
from .llm.jsonreply import ReplyFormatError, parse_json_object
from .prompts import render

LESSON = "reflector_lesson.v1"
MAX_LESSON_WORDS = 50


def block_diff_text(before: str, after: str) -> str:
    """A unified diff of two block texts, as the repair record keeps it."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), "failing", "fixed", lineterm="", n=0)
    return "\n".join(line for line in diff if not line.startswith(("---", "+++")))


def cut_words(text: str, limit: int = MAX_LESSON_WORDS) -> str:
    words = text.split()
    return " ".join(words[:limit])


class Reflector:
    """Writes lessons with an LLM client (`chat_sync`) and keeps them in an ExperienceBase."""

    def __init__(self, client, experiences: ExperienceBase):
        self.client = client
        self.experiences = experiences

    def lessons(self, plan: str, k: int = TOP_K) -> List[str]:
        return [e.lesson for e in self.experiences.retrieve(plan, k)]

    def lesson(self, kind: str, plan: str, detail: str, block: Optional[str] = None, *, arch_id=None) -> Optional[str]:
        """One lesson from the LLM, or None when its reply stays unusable after one retry or the
        call fails (the breaker counted it; the outcome is kept without a lesson)."""
        block = (block or "").strip()
        room = client_room(self.client, render(LESSON, kind=kind, plan="", detail="", block=" " if block else ""),
                           converse=True)
        plan, detail, block = cut_texts([plan, detail, block], room)
        first = messages = render(LESSON, kind=kind, plan=plan, detail=detail, block=block)
        for attempt in (1, 2):
            try:
                reply = self.client.chat_sync(messages, role="reflector", prompt=LESSON, json=True,
                                              arch_id=None if arch_id is None else str(arch_id))
            except (CallFailed, RequestRejected):
                return None
            try:
                lesson = parse_json_object(reply.text, truncated=reply.truncated).get("lesson")
                if not isinstance(lesson, str) or not lesson.strip():
                    raise ReplyFormatError('the reply needs a non-empty string "lesson"')
                return cut_words(lesson.strip())
            except ReplyFormatError as exc:
                self.client.reject(reply, str(exc))
                if attempt == 2:
                    return None
                messages = fit_conversation(self.client, first, [{"role": "assistant", "content": reply.text},
                                                                 *render("reply_retry.v1", error=str(exc))[-1:]])
        return None

    def record(self, kind: str, plan: str, detail: str, *, block: Optional[str] = None, arch_id=None,
               parent_id=None, accuracy_change: Optional[float] = None) -> int:
        """Reflect on one outcome and keep it with its lesson."""
        lesson = self.lesson(kind, plan, detail, block, arch_id=arch_id)
        return self.experiences.add(kind, plan, detail, lesson=lesson, block=block, arch_id=arch_id,
                                    parent_id=parent_id, accuracy_change=accuracy_change)

    def record_modification(self, modification, plan: str, *, arch_id=None, parent_id=None) -> Optional[int]:
        """A failure or a repair of the Modifier (a first-time success waits for training)."""
        if not modification.ok:
            last = modification.attempts[-1] if modification.attempts else None
            detail = "Compiler diagnostics:\n" + (last.check.feedback if last else modification.error or "")
            return self.record("failure", plan, detail, block=last.check.text if last else None,
                               arch_id=arch_id, parent_id=parent_id)
        failing = modification.repaired_from
        repair = getattr(modification, "repair", None)
        if failing is not None and repair:  # the compiler's repair (`--repair auto`): which fixes were needed
            last = modification.attempts[-1]
            fixes = "\n".join(f"- {f['code']} ({f['kind']}): {f['message']}" for f in repair["applied"])
            detail = ("The block failed with:\n" + last.check.feedback + "\nThe compiler repaired it with:\n"
                      + fixes + "\n" + block_diff_text(repair["written"], modification.base_text or ""))
            return self.record("repair", plan, detail, arch_id=arch_id, parent_id=parent_id)
        if failing is not None:
            detail = ("The first block failed with:\n" + failing.check.feedback + "\nThe fix:\n"
                      + block_diff_text(failing.check.text or "", modification.base_text or ""))
            return self.record("repair", plan, detail, arch_id=arch_id, parent_id=parent_id)
        return None

    def record_training(self, plan: str, *, status: str, valid_acc: Optional[float], parent_acc: Optional[float],
                        error: Optional[str] = None, block: Optional[str] = None, arch_id=None,
                        parent_id=None) -> int:
        """A trained architecture: a success, or a training failure (crash, divergence, degradation)."""
        change = None if valid_acc is None or parent_acc is None else valid_acc - parent_acc
        if status != "ok":
            detail = f"Training ended with status {status}" + (f": {error}" if error else "")
            kind = "training-failure"
        elif change is not None and change < 0:
            detail = f"Validation accuracy fell by {-change:.2f} points against the parent ({parent_acc:.2f}%)."
            kind = "training-failure"
        else:
            detail = (f"Validation accuracy {valid_acc:.2f}%" if valid_acc is not None else "Trained") + (
                f", {change:+.2f} points against the parent." if change is not None else ".")
            kind = "success"
        return self.record(kind, plan, detail, block=block, arch_id=arch_id, parent_id=parent_id,
                           accuracy_change=change)
