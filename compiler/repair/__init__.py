"""Repair, not just reject: the compiler fixes the errors it can fix mechanically.

`repair_text` applies fixes to a block file's text until no error it can fix remains:
safe ones (meaning kept: typos, syntax, dead nodes) always, unsafe ones (the architecture
changes, minimally: merge a one-input operation's inputs with `Add`, match channels with a
1x1 `Conv2d`, ...) when asked. Each fix kind is a module of `kinds/`; a candidate is kept only
when the result verifies better, so no repair makes a block worse. `nadc fix` and the
search's repairs use this module.
"""
from __future__ import annotations

from .engine import repair_text, suggest_fixes
from .kind import FixKind
from .kinds import all_kinds
from .result import AppliedFix, LeftBlock, RepairResult

__all__ = ["AppliedFix", "FixKind", "LeftBlock", "RepairResult", "all_kinds", "repair_text", "suggest_fixes"]
