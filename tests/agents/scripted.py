"""A scripted "LLM" for the agents' tests: a responder for the loopback server that answers each
agent's prompt from a script keyed by the plan (tests only).

* Modifier prompts (implement and repair turns): `blocks[plan]` is the list of replies for
  rounds 1, 2, ...; the round is the number of assistant turns already in the conversation; the
  last reply repeats. A plan missing from the script gets the block back unchanged, or with
  `mutate=True` a graph-rewrite mutation of it (seeded by the block's text), preceded every
  `broken_every`-th conversation by a block with an unknown operation (to exercise feedback).
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


def _mutant(block_text: str, plan: str) -> str:
    import hashlib
    import random

    from nader.compiler.mutate import mutate_block
    from nader.dsl.format import format_block
    from nader.dsl.parser import parse

    rng = random.Random(hashlib.sha256((block_text + plan).encode()).hexdigest())
    mutant, _ = mutate_block(parse(block_text).program.blocks[0], rng)
    return format_block(mutant)


class ScriptedLLM:
    def __init__(self, blocks=None, *, interface: str = "", idea: int = 1, mutate: bool = False,
                 broken_every: int = 0):
        self.blocks = dict(blocks or {})
        self.mutate, self.broken_every, self.conversations = mutate, broken_every, 0
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
            ideas = dict(re.findall(r"^(\d+)\. (.*)$", first_user, re.M))
            ranking = [int(k) for k in ideas]
            return reply(json.dumps({"ranking": ranking, "idea": n, "plan": f"apply idea {n} to the block: {ideas[str(n)]}"}))
        if "halves H" in first_user:
            self.seen["interface"] += 1
            return reply(fenced(self.interface))
        self.seen["modifier"] += 1
        match = PLAN.search(first_user)
        plan = match.group(1).strip() if match else ""
        script = self.blocks.get(plan)
        if not script:
            block = re.search(r"```\n(.*?)\n```", first_user, re.S).group(1)
            if not self.mutate:
                return reply(fenced(block))
            if rounds == 0:
                self.conversations += 1
                if self.broken_every and self.conversations % self.broken_every == 0:
                    return reply(fenced(block + "\n99:Frobnicate\n2->99"))
            return reply(fenced(_mutant(block, plan)))
        return reply(fenced(script[min(rounds, len(script) - 1)]))
