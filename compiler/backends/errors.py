"""The error emitters raise for problems the user must fix; the CLI prints it and exits 1."""


class EmitError(Exception):
    """A problem with the input or options that the user must fix (exit 1)."""
