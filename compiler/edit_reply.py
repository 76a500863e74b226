"""An edit reply judged like any reply: applied to the parent, then verified as a base block.

The edits (nader.dsl.edits) are applied to the parent's base block; edits that cannot apply
(an unknown node, an id already taken, ...) go back located at the reply's lines, and the block
they make is verified by `check_base_block`, so its diagnostics quote the new block's lines. A
check of an edit reply says so in its feedback: the LLM wrote edits, not the block it is shown.
"""
from __future__ import annotations

from typing import Optional

from nader.dsl.edits import apply_edits, problems_feedback

from .reply_checks import Check, check_base_block


def check_edit_reply(reply: str, parent_text: str, parent_hash: Optional[str] = None) -> Check:
    """The block the reply's edits make of the parent, verified as a base block (`Check.text`: the
    new block, formatted); `applied` codes are the edit problems' (`edit-unknown-node`, ...)."""
    applied = apply_edits(parent_text, reply)
    if not applied.ok:
        return Check(False, None, problems_feedback(applied), sorted({p.code for p in applied.problems}))
    check = check_base_block(applied.text, parent_hash)
    if check.ok:
        return check
    made = check.text or applied.text
    return Check(False, made, "- the block your edits make does not verify:\n" + check.feedback, check.codes)
