"""The error emitters raise for problems the user must fix; the CLI prints it and exits 1."""


class EmitError(Exception):
    """A problem with the input or options that the user must fix (exit 1)."""


class DiagnosedError(EmitError):
    """An emit refused for diagnostics the user must fix; the CLI prints them as `nadc verify` would."""

    def __init__(self, message: str, diagnostics: list):
        super().__init__(message)
        self.diagnostics = diagnostics
