"""Repair, not just reject: the compiler fixes the errors it can fix mechanically.

`repair_text` applies fixes to a block file's text until no error it can fix remains:
safe ones (meaning kept: typos, syntax, dead nodes) always, unsafe ones (the architecture
changes, minimally: merge a one-input operation's inputs with `Add`, match channels with a
1x1 `Conv2d`, ...) when asked. Each fix kind is a module of `kinds/`; a candidate is kept only
when the result verifies better, so no repair makes a block worse. `nadc fix` and the
search's repairs use this module; `suggest_fixes` is what `nadc verify` attaches to errors.

The names below load their module on first use (as `nader.dsl`'s do): `nadc verify` on a failing
file loads the suggestions, not the repair loop and its results.
"""
from nader import lazy_exports

_EXPORTS = {
    "repair_text": "engine", "suggest_fixes": "suggest", "FixKind": "kind", "all_kinds": "kinds",
    "AppliedFix": "result", "LeftBlock": "result", "RepairResult": "result",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
