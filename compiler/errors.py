"""The compiler's one build error, raised wherever an architecture or a block cannot become a module.

Loading an architecture, fitting widths, planning a network and building a block in PyTorch
(`backends/torch_backend.py`) all raise this class. It subclasses
`nader.runtime.errors.ArchitectureError`, which the runtime (below the compiler) records as a
`build` failure. Where an emitter turns one into its own error (`EmitError` for `nadc --emit`,
`OnnxLoweringError` on the way to ONNX), that error carries the `diagnostics` on, and `nadc`
prints them as `nadc verify` would (tests/test_build_errors.py follows each place).
"""
from __future__ import annotations

from typing import Sequence

from nader.runtime.errors import ArchitectureError


class BuildError(ArchitectureError):
    """The architecture or block cannot be built: it fails verification, breaks a constraint at the
    requested sizes, or no width fits the budget. The message is meant for users; `diagnostics`
    holds the verifier's, when the failure is theirs."""

    def __init__(self, message: str, diagnostics: Sequence = ()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)
