"""A reply's block repaired by the compiler (`nader.compiler.repair`), for the search's `--repair`.

The Modifier's reply failed verification; where the compiler's fixes (safe and unsafe: an
unsafe fix changes the architecture, minimally) make it verify as a base block, different from
the parent, the result is offered: accepted as the candidate (`auto`) or shown to the LLM as the
proposed fix (`suggest`). What is recorded with the candidate (`ReplyRepair.record`) is the block
the LLM wrote, the repair as a unified diff, the codes fixed and the fixes in order; the repair
is deterministic, so a resumed search that replays the same reply repairs it the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nader.dsl.ir import Role
from nader.dsl.parser import parse

from .reply_checks import Check, check_base_block
from .repair import RepairResult, repair_text

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
        return "\n".join(lines) + "\n```diff\n" + self.result.diff("block").rstrip("\n") + "\n```"


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
