"""A reply's block repaired by the compiler (`nader.compiler.repair`), for the search's `--repair`.

The Modifier's reply failed verification; where the compiler's fixes (safe and unsafe: an
unsafe fix changes the architecture, minimally) make it verify as a base block, different from
the parent, the result is offered: accepted as the candidate (`auto`) or shown to the LLM as the
proposed fix (`suggest`). What is recorded with the candidate (`ReplyRepair.record`) is the block
the LLM wrote, the repair as a unified diff, the codes fixed and the fixes in order; the repair
is deterministic, so a resumed search that replays the same reply repairs it the same way.

An edit reply (nader.dsl.edits) is repaired from the block its edits make: an edit that cannot
apply (an unknown node, an id already taken, a line that is no edit) is left out, an unsafe fix
of kind `drop-edit` each, and the block the others make is then repaired like any block. Small
models write a few good edits among bad ones (Gemma 3 270M wrote `replace 3x3:BN`). Where no
repair makes that block verify, the reply's last edits are left out too, the longest beginning
whose block repairs first: a small model writes until the grammar's bound, its later edits noise
(Gemma 3 270M, 100 NAD requests: this took 5 of the 8 replies the repair could not take whole).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nader.dsl.edits import Applied, apply_edits
from nader.dsl.ir import Role
from nader.dsl.parser import parse

from .reply_checks import Check, check_base_block
from .repair import RepairResult, repair_text
from .repair.result import AppliedFix

REPAIR_MODES = ("off", "suggest", "auto")
REPAIRED = "repaired by the compiler"


@dataclass(frozen=True)
class ReplyRepair:
    """A repair that makes the reply's block verify: `check` the repaired block's (ok)."""

    written: str  # the block as the LLM wrote it (extracted, or made by its edits)
    result: RepairResult
    check: Check

    def record(self) -> dict:
        """What the search stores with the candidate (`change["repair"]`)."""
        return {"written": self.written, "diff": self.result.diff("block"), "fixed": list(self.result.fixed_codes),
                "applied": [f.to_json() for f in self.result.applied]}

    def proposal(self) -> str:
        """The fix in words and as a diff, for the LLM's feedback (`suggest`)."""
        lines = [f"- {f.code} ({f.kind}, {f.safety}): {f.message}" for f in self.result.applied]
        diff = self.result.diff("block").rstrip("\n")
        return "\n".join(lines) + (f"\n```diff\n{diff}\n```" if diff else "")


def _base_block_text(text: str) -> str:
    """The lines of the reply's base block (the first with a base role), or the text when it holds one block."""
    blocks = parse(text).program.blocks
    if len(blocks) <= 1:
        return text
    block = next((b for b in blocks if b.inferred_role() is Role.BASE), blocks[0])
    lines = text.splitlines()
    return "\n".join(lines[block.span.line - 1:block.span.end_line]) + "\n"


def repair_reply(failed: Check, parent_hash: Optional[str] = None) -> Optional[ReplyRepair]:
    """The compiler's repair of a reply whose block failed `check_base_block`, or None where there is
    no block to repair or the repair does not make it verify (or gives back the parent)."""
    if failed.ok or not failed.text:
        return None
    written = _base_block_text(failed.text)
    result = repair_text(written, unsafe=True, role=Role.BASE)
    if not result.changed or not result.ok:
        return None
    check = check_base_block(result.text, parent_hash)
    return ReplyRepair(written, result, check) if check.ok else None


DROP_EDIT = "drop-edit"  # documented with the fix kinds (`nadc explain drop-edit`)


def repair_edit_reply(reply: str, parent_text: str, parent_hash: Optional[str] = None) -> Optional[ReplyRepair]:
    """The compiler's repair of an edit reply that failed `check_edit_reply`: the edits that apply
    (each one left out an unsafe `drop-edit` fix), then the block they make repaired; where no
    repair makes that block verify, the same with the reply's last edits left out too (`drop-edit`s
    of code `edit-left-out`), the longest beginning first; None where nothing verifies that differs
    from the parent."""
    applied = apply_edits(parent_text, reply, skip=True)
    if applied.text is None or (not applied.problems and check_base_block(applied.text, parent_hash).ok):
        return None  # no edit, or it verifies as written: nothing to repair
    # A small model writes its edits until the grammar's bound (Gemma 3 270M: every reply); what it
    # meant comes first, so where the whole reply cannot be repaired, its beginnings are tried.
    for keep in (None, *range(len(applied.reply.edits) - 1, 0, -1)):
        fixed = _repair_applied(applied if keep is None else apply_edits(parent_text, reply, skip=True, keep=keep),
                                parent_hash)
        if fixed is not None:
            return fixed
    return None


def _repair_applied(applied: Applied, parent_hash: Optional[str]) -> Optional[ReplyRepair]:
    """The repair of the block the applied edits make (some left out: a `drop-edit` fix each)."""
    if applied.text is None:
        return None
    lines = applied.reply.lines
    dropped = tuple(AppliedFix(p.code, DROP_EDIT, "unsafe", f"left out line {p.line}"
                               + (f" `{lines[p.line - 1].strip()[:60]}`" if 1 <= p.line <= len(lines) else "")
                               + f": {p.message}") for p in applied.problems)
    check = check_base_block(applied.text, parent_hash)
    if check.ok:
        return ReplyRepair(applied.text, RepairResult(applied.text, applied.text, dropped, ()), check)
    fixed = repair_text(applied.text, unsafe=True, role=Role.BASE)
    if not fixed.changed or not fixed.ok:
        return None
    check = check_base_block(fixed.text, parent_hash)
    if not check.ok:
        return None
    return ReplyRepair(applied.text, RepairResult(fixed.original, fixed.text, dropped + fixed.applied, ()), check)
