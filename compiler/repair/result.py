"""What a repair did: the fixes applied, the text before and after, and the errors left."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Optional

from nader.dsl.diagnostics import Diagnostic


@dataclass(frozen=True)
class AppliedFix:
    """One fix the repair applied."""

    code: str  # the diagnostic it answered: "NAD207"
    kind: str  # "merge-inputs-add"
    safety: str  # "safe" | "unsafe"
    message: str  # one line: what it did

    def to_json(self) -> dict:
        return {"code": self.code, "kind": self.kind, "safety": self.safety, "message": self.message}


@dataclass(frozen=True)
class LeftBlock:
    """A block the repair left as it was: the fixes it found did not make it verify."""

    block: str  # its name (the names of the blocks of its lines, where a fix made several)
    fixes: tuple[AppliedFix, ...]  # what `partial` would have applied
    errors: int  # the errors left after them

    def message(self) -> str:
        n, e = len(self.fixes), self.errors
        return (f"block `{self.block}` left as it was: after {n} fix{'es' if n != 1 else ''} {e} error"
                f"{'s' if e != 1 else ''} would remain (`--partial` applies them)")

    def to_json(self) -> dict:
        return {"block": self.block, "fixes": [f.to_json() for f in self.fixes], "errors": self.errors}


@dataclass(frozen=True)
class RepairResult:
    """The text before and after repair, the fixes applied in order, and the errors that remain."""

    original: str
    text: str  # the repaired text (== original when nothing applied)
    applied: tuple[AppliedFix, ...]
    remaining: tuple[Diagnostic, ...]  # errors left after repair
    left: tuple[LeftBlock, ...] = ()  # blocks left as they were: no verifying repair found (not `partial`)
    stopped: Optional[str] = None  # errors | budget | steps: it stopped before a fixed point (engine.repair_text)

    @property
    def changed(self) -> bool:
        return self.text != self.original

    @property
    def ok(self) -> bool:
        """No error remains."""
        return not self.remaining

    @property
    def fixed_codes(self) -> tuple[str, ...]:
        """The codes the applied fixes answered, each once, in the order first fixed."""
        return tuple(dict.fromkeys(f.code for f in self.applied))

    def diff(self, name: str = "block") -> str:
        """A unified diff from the original text to the repaired one ("" when unchanged)."""
        if not self.changed:
            return ""
        # git's a/ b/ prefixes for a relative name (`patch -p1`); an absolute path stays as it is (`patch -p0`)
        before, after = (name, name) if name.startswith("/") else (f"a/{name}", f"b/{name}")
        return "".join(difflib.unified_diff(_lines(self.original), _lines(self.text), before, after))

    def to_json(self) -> dict:
        return {"changed": self.changed, "ok": self.ok, "applied": [f.to_json() for f in self.applied],
                "remaining": [d.to_json() for d in self.remaining], "left": [b.to_json() for b in self.left]}


def _lines(text: str) -> list[str]:
    """Lines with their line breaks; the last one gets one too, so a diff's lines all end."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines
