"""A scripted "LLM" for the agents' tests: a responder for the loopback server that answers each
agent's prompt from a script keyed by the plan (tests only).

* Modifier prompts (implement and repair turns): `blocks[plan]` is the list of replies for
  rounds 1, 2, ...; the round is the number of assistant turns already in the conversation; the
  last reply repeats. A plan missing from the script gets the block back unchanged.
* Interface prompts: `interface` (the stem and downsample reply).
* Proposer prompts: picks `idea` (default 1) and writes "apply idea N".
* Reflector prompts: a fixed lesson naming the outcome kind.
"""
from __future__ import annotations

import json
import re

from loopback import reply

PLAN = re.compile(r"Modify it according to this plan:\n(.*?)\n(?:\nLessons learnt|\nReply with)", re.S)


def fenced(text: str) -> str:
    return f"Here is the block:\n```\n{text.strip()}\n```\n"


class ScriptedLLM:
    def __init__(self, blocks=None, *, interface: str = "", idea: int = 1):
        self.blocks = dict(blocks or {})
        self.interface = interface
        self.idea = idea
        self.seen = {"modifier": 0, "proposer": 0, "reflector": 0, "interface": 0}

    def __call__(self, body):
        messages = body["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        rounds = sum(1 for m in messages if m["role"] == "assistant")
        if "distil each outcome" in system:
            self.seen["reflector"] += 1
            kind = re.search(r"Outcome: (\S+)", first_user).group(1)
            return reply(json.dumps({"lesson": f"After a {kind}: check every node's input count and shapes."}))
        if "propose exactly one" in system:
            self.seen["proposer"] += 1
            n = self.idea
            ranking = [int(k) for k in re.findall(r"^(\d+)\. ", first_user, re.M)]
            return reply(json.dumps({"ranking": ranking, "idea": n, "plan": f"apply idea {n} to the block"}))
        if "halves H" in first_user:
            self.seen["interface"] += 1
            return reply(fenced(self.interface))
        self.seen["modifier"] += 1
        match = PLAN.search(first_user)
        plan = match.group(1).strip() if match else ""
        script = self.blocks.get(plan)
        if not script:
            block = re.search(r"```\n(.*?)\n```", first_user, re.S).group(1)
            return reply(fenced(block))
        return reply(fenced(script[min(rounds, len(script) - 1)]))
