"""`genius`: GENIUS (Zheng et al., 2023), the LLM as a black-box optimiser.

Each iteration shows the LLM every architecture tried so far with its validation accuracy and
asks for one that outperforms them (temperature 0, as in the paper). It works in two spaces:

* `--space nb201`: the LLM answers with the six operations of a NAS-Bench-201 cell as
  `op_list = [a, b, c, d, e, f]` (ids 0-4, the paper's encoding; prompt `genius_cell.v2`, or
  `genius_cell.v3` with the cell reply's grammar, `cell_reply.reply_grammar`, which leaves out the cells
  tried, where the model's profile
  is small or names a grammar field) or a NAS-Bench-201 string. The reply is parsed strictly
  (never evaluated).
* the block language (default): the LLM writes a whole base block (prompt `genius_block.v2`),
  verified by the compiler and built with the root's stem and reduction blocks.

A reply that cannot be used goes back with the reason (the parse error, or the compiler's
diagnostics with fix hints) for at most `repairs` more replies (`genius_repair.v1`); then the
proposal is recorded as invalid with the reason (in `change["failure"]`), and that, like a
proposal that repeats an architecture, shows in the next prompt's history: no prompt is sent
twice, so a deterministic server does not answer the same unusable reply until a cap stops it.
A reply the checks raise on is unusable the same way, and a call that fails after its retries
makes an invalid proposal with its reason (the client's breaker stops the run after repeated
failures).

* `ask`: waits while an architecture is being evaluated (each proposal sees every result
  before it); the parent is the last architecture evaluated, so the tree is the chain of
  iterations. After `iterations` evaluated proposals it stops the search (code `iterations`);
  `--trials` counts the root as well, so the default 30 never binds before the default 10.
  After 8 proposals in a row that were invalid or repeats, at least one a repeat, it stops too
  (code `rejects`); invalid ones only are the loop's `--max-invalid` stop (code `invalid`).
* `propose`: one conversation with the LLM; its tokens and cost go on the candidate.
* `tell`: nothing: the history is rebuilt from the tree, so a resumed search continues it.

The paper continues one chat, appending "By using this model, we achieved an accuracy of X%";
here each iteration renders the whole history into one prompt, which holds the same information,
and makes every call a function of the tree, so a resumed or replayed run asks the same questions.
The LLM client is the project's one client: calls are recorded in the run's `runs.sqlite`.
The prompts, the block check and the repair conversation are GENIUS's role (`nader.agents.genius`);
this module is the adapter: when to ask, the history from the tree. The cell space's replies are
read by `spaces/nb201.py` (`parse_cell_reply`).
"""
from __future__ import annotations

from typing import List, Optional

from nader.agents.genius import CellReply, Genius, base_block, failure_text, outcome

from ..spaces import cell_reply, nb201
from ..candidate import Candidate
from ..tree import FINAL, PENDING, REJECTED, TRIALS
from .base import StopSearch, Strategy
from .catalog import DECLARED, LLM_SESSION_OPTIONS
from .llm import LLMTeam, proposal_failure

ROLE = "genius"
MAX_REJECTED_IN_ROW = 8  # proposals in a row that were repeated (or invalid) before GENIUS gives up


class GeniusStrategy(Strategy):
    name = "genius"
    summary, options = DECLARED[name]
    session_options = LLM_SESSION_OPTIONS
    block_repairs = True  # `--repair`: the compiler repairs its blocks (the language space; default auto)

    def __init__(self, **options):
        super().__init__(**options)
        self.tree = None
        self._team = self._genius = None

    # ------------------------------------------------------------------ wiring
    def bind(self, context) -> None:
        super().bind(context)
        self._llm()  # a missing endpoint stops the run before anything trains

    def _llm(self):
        if self._genius is None:
            self._team = LLMTeam(self.settings, self.context.run_dir, ROLE, self.context.llm_caps)
            reply = CellReply(tuple(cell_reply.OP_TEXT[op] for op in nb201.OPS), cell_reply.REASON_WORDS,
                              lambda tried: cell_reply.reply_grammar("gbnf", exclude=tried)) if self.cells else None
            self._genius = Genius(self._team.counting, repairs=self.settings["repairs"],
                                  iterations=self.settings["iterations"], dataset=self.context.dataset,
                                  skeleton=self.context.skeleton, cell_reply=reply)
        return self._genius

    def close(self) -> None:
        if self._team is not None:
            self._team.close()
        self._team = self._genius = None

    @property
    def cells(self) -> bool:
        return self.space is not None and self.space.name == "nb201"

    # ------------------------------------------------------------------ the interface
    def ask(self, tree, rng):
        self.tree = tree
        if any(n.status in PENDING for n in tree):
            return None  # each proposal sees every result before it
        done = sum(1 for n in tree if n.operator == ROLE and n.status in TRIALS)
        if done >= self.settings["iterations"]:
            raise StopSearch(f"GENIUS made its {done} iterations", code="iterations")
        ours = [n for n in tree if n.operator == ROLE]
        last = ours[-MAX_REJECTED_IN_ROW:]
        if len(last) == MAX_REJECTED_IN_ROW and all(n.status in REJECTED for n in last) \
                and any(n.status != "invalid" for n in last):  # only invalid ones: the loop's --max-invalid
            raise StopSearch(f"GENIUS's last {MAX_REJECTED_IN_ROW} proposals were all invalid or already tried",
                             code="rejects")
        evaluated = [n for n in tree if n.status in FINAL]
        return max(evaluated, key=lambda n: (n.finished or 0, n.arch_id)) if evaluated else tree.root

    def propose(self, parent, rng) -> Candidate:
        genius = self._llm()  # outside the guard: a configuration error stops the run
        change = {"iteration": 1 + sum(1 for n in self.tree if n.operator == ROLE and n.status in TRIALS)}
        try:
            if self.cells:
                check = nb201.check_cell_reply
            else:
                check = genius.block_check(self.tree.root.text, self.context.repair, change)
            answer = genius.answer(self.history(), change["iteration"], check, cells=self.cells,
                                   arch_id=str(self.tree.next_id), progress=change)
            if answer.text is not None and self.cells:
                change["cell"] = str(nb201.cell_of_text(answer.text))
            change["replies"] = answer.replies
            return self._candidate(answer.text, change, answer.error)
        except Exception as exc:  # a failed call or a reply that raised: a rejected proposal
            return self._candidate(None, change, proposal_failure(exc))

    def _candidate(self, text: Optional[str], change: dict, error: Optional[str]) -> Candidate:
        spent = self._team.counting.take()
        if text is None and error:
            change = {**change, "failure": failure_text(error)}  # the next prompts show it
        return Candidate(text, origin="llm", operator=ROLE, change={**change, "tokens": spent.by_role}, error=error,
                         tokens_in=spent.prompt_tokens, tokens_out=spent.completion_tokens, cost_usd=spent.cost_usd)

    # ------------------------------------------------------------------ the history
    def history(self) -> List[dict]:
        """The root and every GENIUS proposal, oldest first, with what became of it."""
        out = []
        for node in self.tree:
            if node.arch_id != 0 and node.operator != ROLE:
                continue
            same = self.tree.nodes.get(node.duplicate_of) if node.status == "duplicate" else None
            entry = {"id": node.arch_id, "result": outcome(node.status, node.valid_acc, node.duplicate_of,
                                                           same.valid_acc if same is not None else None,
                                                           node.change.get("failure"))}
            if self.cells:
                try:
                    cell = nb201.cell_of_text(node.text) if node.text else None
                except nb201.NotInSpace:
                    cell = None
                if cell is not None:  # else nothing usable was proposed: the result says why
                    entry.update(cell=str(cell), op_list=nb201.op_list_text(cell))
            elif node.text:
                entry["block"] = base_block(node.text)
            out.append(entry)
        return out

