"""What the Modifier does with a reply whose block fails: the search's `--repair off|suggest|auto`.

The Modifier's conversation (`modifier.py`: ask, check, send the diagnostics back) is the same loop
in every mode; it asks a `RepairPolicy` two things about each failing reply:

* `repair`: the compiler's repair of it (nader.compiler.reply_repair), where the policy looks for one
  and the conversation has a repairer: base blocks and edit replies do; the rare stem-and-downsample
  round has none, so every mode answers it as `off` does;
* `turn`: the next feedback turn, a template and its variables, given that repair (or None).

`auto` takes a repair as the result (`settles`), with no further round; `suggest` shows it to the
LLM as the proposed fix (`modifier_repair.v2`; the edit turn takes it as its `proposal`); `off`, the
library's default, sends `modifier_repair.v1` as before, so recorded runs replay.
"""
from __future__ import annotations

from typing import Callable, Optional

from nader.compiler.reply_checks import Check
from nader.compiler.reply_repair import REPAIR_MODES, ReplyRepair

REPAIR = "modifier_repair.v1"
EDITS_REPAIR = "modifier_edits_repair.v1"
SUGGEST = "modifier_repair.v2"  # REPAIR with the compiler's proposed fix

#: The compiler's repair of a failing reply: (its check, the reply) -> the repair, or None.
Repairer = Callable[[Check, str], Optional[ReplyRepair]]


class RepairPolicy:
    """`off`: the compiler does not repair; the LLM gets the diagnostics (the base of the others)."""

    mode = "off"

    def repair(self, repairer: Optional[Repairer], failed: Check, reply: str) -> Optional[ReplyRepair]:
        """The compiler's repair of the failing reply, where this policy looks for one."""
        return None

    def settles(self, repair: ReplyRepair) -> bool:
        """Whether the repair is the result, ending the conversation."""
        return False

    def turn(self, retry: str, repair: Optional[ReplyRepair], repairable: bool) -> tuple[str, dict]:
        """The feedback turn's template and its variables beyond the feedback: `retry` is the
        conversation's (REPAIR or EDITS_REPAIR); `repairable`, whether it has a repairer."""
        return retry, ({"proposal": ""} if retry == EDITS_REPAIR else {})


class _Repairing(RepairPolicy):
    def repair(self, repairer: Optional[Repairer], failed: Check, reply: str) -> Optional[ReplyRepair]:
        return repairer(failed, reply) if repairer is not None else None


class Suggest(_Repairing):
    """`suggest`: the repair goes to the LLM as the proposed fix, and the LLM decides."""

    mode = "suggest"

    def turn(self, retry: str, repair: Optional[ReplyRepair], repairable: bool) -> tuple[str, dict]:
        if not repairable:
            return super().turn(retry, repair, repairable)
        return (SUGGEST if retry == REPAIR else retry), {"proposal": repair.proposal() if repair is not None else ""}


class Auto(_Repairing):
    """`auto`: the repair is the result, with no further round."""

    mode = "auto"

    def settles(self, repair: ReplyRepair) -> bool:
        return True


#: One per `--repair` choice (REPAIR_MODES, the search's; tests/agents/test_modifier.py checks it).
POLICIES = {policy.mode: policy for policy in (RepairPolicy, Suggest, Auto)}


def repair_policy(mode: str) -> RepairPolicy:
    """The policy of a `--repair` mode; ValueError for another."""
    if mode not in POLICIES:
        raise ValueError(f"repair is one of {', '.join(REPAIR_MODES)}")
    return POLICIES[mode]()
