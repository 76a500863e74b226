"""`genius`: GENIUS (Zheng et al., 2023), the LLM as a black-box optimiser.

Each iteration shows the LLM every architecture tried so far with its validation accuracy and
asks for one that outperforms them (temperature 0, as in the paper). It works in two spaces:

* `--space nb201`: the LLM answers with the six operations of a NAS-Bench-201 cell as
  `op_list = [a, b, c, d, e, f]` (ids 0-4, the paper's encoding; prompt `genius_cell.v1`) or a
  NAS-Bench-201 string. The reply is parsed strictly (never evaluated).
* the block language (default): the LLM writes a whole base block (prompt `genius_block.v1`),
  verified by the compiler and built with the root's stem and reduction blocks.

A reply that cannot be used goes back with the reason (the parse error, or the compiler's
diagnostics with fix hints) for at most `repairs` more replies (`genius_repair.v1`); then the
proposal is recorded as invalid, and that, like a proposal that repeats an architecture, shows in
the next prompt's history. A reply the checks raise on is unusable the same way, and a call that
fails after its retries makes an invalid proposal (the client's breaker stops the run after
repeated failures).

* `ask`: waits while an architecture is being evaluated (each proposal sees every result
  before it); the parent is the last architecture evaluated, so the tree is the chain of
  iterations. After `iterations` evaluated proposals it stops the search (code `iterations`);
  `--trials` counts the root as well, so the default 30 never binds before the default 10.
  After 8 proposals in a row that were invalid or repeats, it stops too (code `rejects`).
* `propose`: one conversation with the LLM; its tokens and cost go on the candidate.
* `tell`: nothing: the history is rebuilt from the tree, so a resumed search continues it.

The paper continues one chat, appending "By using this model, we achieved an accuracy of X%";
here each iteration renders the whole history into one prompt, which holds the same information,
and makes every call a function of the tree, so a resumed or replayed run asks the same questions.
The LLM client is the project's one client: calls are recorded in the run's `runs.sqlite`.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from nader.runtime.errors import ConfigError

from ..tree import FINAL, PENDING, REJECTED, TRIALS
from .base import Candidate, Option, Strategy
from .llm import LLM_OPTIONS, LLM_SESSION_OPTIONS, open_llm_client, proposal_failure, run_caps

CELL_PROMPT = "genius_cell.v1"
BLOCK_PROMPT = "genius_block.v1"
REPAIR_PROMPT = "genius_repair.v1"
ROLE = "genius"
MAX_REJECTED_IN_ROW = 8  # proposals in a row that were invalid or repeated before GENIUS gives up
_OP_LIST = re.compile(r"op_list\s*=\s*\[([^\[\]]*)\]")
_NB201_STRING = re.compile(r"\|[^\s|]+~\d\|\+\|[^\s|]+~\d\|[^\s|]+~\d\|\+\|[^\s|]+~\d\|[^\s|]+~\d\|[^\s|]+~\d\|")


class GeniusStrategy(Strategy):
    name = "genius"
    summary = "GENIUS: the LLM proposes the next architecture from every one tried and its accuracy (temperature 0)"
    options = {
        "iterations": Option(int, 10, "proposals to evaluate (the root is evaluated first, besides)", minimum=1),
        "repairs": Option(int, 2, "unusable replies sent back with the reason, per proposal", minimum=0),
        **LLM_OPTIONS,
    }
    session_options = LLM_SESSION_OPTIONS

    def __init__(self, **options):
        super().__init__(**options)
        self.run_dir = self.store = self.tree = None
        self.dataset, self.skeleton = "the dataset", "nb201"
        self._client = self._counting = None

    # ------------------------------------------------------------------ wiring
    def bind(self, run_dir, store=None) -> None:
        self.run_dir, self.store = run_dir, store
        config = (store.config() if store is not None else None) or {}
        self.dataset = config.get("dataset", self.dataset)
        self.skeleton = config.get("skeleton", self.skeleton)
        self._llm()  # a missing endpoint stops the run before anything trains

    def _llm(self):
        if self._counting is None:
            from nader.agents.tokens import CountingClient

            if self.run_dir is None:
                raise ConfigError("the genius strategy needs the run directory (bind(run_dir))")
            self._client = open_llm_client(self.settings, self.run_dir, ROLE, run_caps(self.store))
            self._counting = CountingClient(self._client)
        return self._counting

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = self._counting = None

    @property
    def cells(self) -> bool:
        return self.space is not None and self.space.name == "nb201"

    # ------------------------------------------------------------------ the interface
    def ask(self, tree, rng):
        from ..loop import StopSearch

        self.tree = tree
        if any(n.status in PENDING for n in tree):
            return None  # each proposal sees every result before it
        done = sum(1 for n in tree if n.operator == ROLE and n.status in TRIALS)
        if done >= self.settings["iterations"]:
            raise StopSearch(f"GENIUS made its {done} iterations", code="iterations")
        ours = [n for n in tree if n.operator == ROLE]
        last = ours[-MAX_REJECTED_IN_ROW:]
        if len(last) == MAX_REJECTED_IN_ROW and all(n.status in REJECTED for n in last):
            raise StopSearch(f"GENIUS's last {MAX_REJECTED_IN_ROW} proposals were all invalid or already tried",
                             code="rejects")
        evaluated = [n for n in tree if n.status in FINAL]
        return max(evaluated, key=lambda n: (n.finished or 0, n.arch_id)) if evaluated else tree.root

    def propose(self, parent, rng) -> Candidate:
        llm = self._llm()  # outside the guard: a configuration error stops the run
        change = {"iteration": 1 + sum(1 for n in self.tree if n.operator == ROLE and n.status in TRIALS)}
        try:
            return self._propose(llm, change)
        except Exception as exc:  # a failed call or a reply that raised: a rejected proposal
            spent = llm.take()
            return Candidate(None, origin="llm", operator=ROLE, change={**change, "tokens": spent.by_role},
                             error=proposal_failure(exc), tokens_in=spent.prompt_tokens,
                             tokens_out=spent.completion_tokens, cost_usd=spent.cost_usd)

    def _propose(self, llm, change: dict) -> Candidate:
        from nader.agents.prompts import render

        tree = self.tree
        iteration = change["iteration"]
        common = {"dataset": self.dataset, "history": self.history(), "iteration": iteration,
                  "iterations": self.settings["iterations"]}
        if self.cells:
            prompt, check = CELL_PROMPT, self._cell_text
            messages = render(prompt, **common)
        else:
            from nader.dsl.ops import reference_text

            prompt, check = BLOCK_PROMPT, self._block_text
            messages = render(prompt, reference=reference_text(), skeleton=self.skeleton, **common)
        arch_id = str(tree.next_id)
        repairs = self.settings["repairs"]
        text, feedback, replies = None, "", 0
        for round_ in range(repairs + 1):
            reply = llm.chat_sync(messages, role=ROLE, arch_id=arch_id, prompt=prompt if round_ == 0 else REPAIR_PROMPT,
                                  temperature=0)
            replies += 1
            change["replies"] = replies
            text, feedback = _checked(check, reply.text)
            if text is not None:
                break
            if round_ < repairs:
                messages = [*messages, {"role": "assistant", "content": reply.text},
                            *render(REPAIR_PROMPT, feedback=feedback, round=round_ + 1, rounds=repairs)[-1:]]
        if text is not None and self.cells:
            from ..spaces import nb201

            change["cell"] = str(nb201.cell_of_text(text))
        spent = llm.take()
        change.update(replies=replies, tokens=spent.by_role)
        error = None if text is not None else f"no usable answer after {replies} replies: {feedback}"
        return Candidate(text, origin="llm", operator=ROLE, change=change, error=error,
                         tokens_in=spent.prompt_tokens, tokens_out=spent.completion_tokens, cost_usd=spent.cost_usd)

    # ------------------------------------------------------------------ the history
    def history(self) -> List[dict]:
        """The root and every GENIUS proposal, oldest first, with what became of it."""
        out = []
        for node in self.tree:
            if node.arch_id != 0 and node.operator != ROLE:
                continue
            entry = {"id": node.arch_id, "result": self._result(node)}
            if self.cells:
                from ..spaces import nb201

                try:
                    cell = nb201.cell_of_text(node.text) if node.text else None
                except nb201.NotInSpace:
                    cell = None
                if cell is None:
                    continue  # nothing usable was proposed: no cell to show
                entry.update(cell=str(cell), op_list=op_list_text(cell))
            else:
                if not node.text:
                    continue
                entry["block"] = _base_block(node.text)
            out.append(entry)
        return out

    def _result(self, node) -> str:
        if node.status == "ok" and node.valid_acc is not None:
            return f"validation accuracy {node.valid_acc:.2f}%"
        if node.status == "duplicate":
            same = self.tree.nodes.get(node.duplicate_of)
            acc = f" (validation accuracy {same.valid_acc:.2f}%)" if same is not None and same.valid_acc is not None else ""
            return f"already tried as experiment #{node.duplicate_of}{acc}; not evaluated again"
        if node.status in REJECTED:
            return f"{node.status}, not evaluated"
        if node.status == "diverged":
            return "training diverged"
        if node.status == "failed":
            return "could not be evaluated"
        return node.status

    # ------------------------------------------------------------------ reading replies
    def _cell_text(self, reply: str) -> Tuple[Optional[str], str]:
        from ..spaces import nb201

        try:
            cell = parse_cell_reply(reply)
        except nb201.NotInSpace as exc:
            return None, f"- {exc}"
        return nb201.architecture(cell), ""

    def _block_text(self, reply: str) -> Tuple[Optional[str], str]:
        from nader.agents.modifier import check_architecture, check_base_block

        checked = check_base_block(reply)
        if not checked.ok:
            return None, checked.feedback
        root = self.tree.root
        text = _with_root_blocks(checked.text, root.text)
        built = check_architecture(text, self.skeleton)
        if not built.ok:
            return None, built.feedback
        return text, ""


def _checked(check, reply: str) -> Tuple[Optional[str], str]:
    """`check(reply)`; a reply too long to read or one the check raises on is unusable like any
    other (the reason goes back to the LLM, then into the record), never the run's failure."""
    from nader.agents.llm.jsonreply import reply_too_long

    too_long = reply_too_long(reply)
    if too_long:
        return None, f"- {too_long}"
    try:
        return check(reply)
    except Exception as exc:  # noqa: BLE001 - whatever the reply does to the checks is the reply's failure
        return None, f"- the reply could not be checked: {type(exc).__name__}: {str(exc)[:300]}"


def op_list_text(cell) -> str:
    from ..spaces import nb201

    return "[" + ", ".join(str(nb201.OPS.index(op)) for op in cell.ops) + "]"


def parse_cell_reply(reply: str):
    """The cell a reply names: its last `op_list = [...]` line (six ids 0-4 or operation names),
    else a NAS-Bench-201 string in it. Raises NotInSpace with the reason."""
    from ..spaces import nb201

    lists = _OP_LIST.findall(reply or "")
    if lists:
        items = [item.strip().strip("'\"") for item in lists[-1].split(",") if item.strip()]
        if len(items) != len(nb201.EDGES):
            raise nb201.NotInSpace(f"op_list has {len(items)} entries; it needs 6 operation ids from 0 to 4")
        ops = []
        for item in items:
            if item.isdigit() and int(item) < len(nb201.OPS):
                ops.append(nb201.OPS[int(item)])
            elif item in nb201.OPS:
                ops.append(item)
            else:
                raise nb201.NotInSpace(f"op_list entry {item[:40]!r} is not an operation id from 0 to 4")
        return nb201.Cell(tuple(ops))
    strings = _NB201_STRING.findall(reply or "")
    if strings:
        return nb201.Cell.parse(strings[-1])
    raise nb201.NotInSpace("no line `op_list = [a, b, c, d, e, f]` with six operation ids from 0 to 4 in the reply")


def _base_block(arch_text: str) -> str:
    from nader.agents.modifier import split_architecture

    try:
        return split_architecture(arch_text)[0].strip()
    except ValueError:
        return arch_text.strip()


def _with_root_blocks(base_text: str, root_text: str) -> str:
    """The new base block with the root's stem and reduction blocks, renamed after it."""
    from nader.agents.modifier import split_architecture

    _, stem, down = split_architecture(root_text)
    first = base_text.strip().splitlines()[0].strip()
    name = first.strip("#") if first.startswith("##") else "Block"

    def renamed(block: str, new: str) -> str:
        lines = block.strip().splitlines()
        lines[0] = f"##{new}##"
        return "\n".join(lines) + "\n"

    return base_text.rstrip("\n") + "\n" + renamed(stem, f"{name}_stem") + renamed(down, f"{name}_downsample")
