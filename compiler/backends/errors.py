"""The error emitters raise for problems the user must fix; the CLI prints it and exits 1."""
from __future__ import annotations

from typing import Sequence


class EmitError(Exception):
    """A problem with the input or options that the user must fix (exit 1). `diagnostics`: the
    verifier's, where the problem is theirs (a `BuildError`'s, carried on): the CLI prints them as
    `nadc verify` would, before the message."""

    def __init__(self, message: str, diagnostics: Sequence = ()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


class DiagnosedError(EmitError):
    """An emit refused for its diagnostics alone: the CLI prints them, and no message."""
