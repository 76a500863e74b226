"""Exceptions of the runtime. Every one carries a message meant for the user."""
from __future__ import annotations


class RuntimeToolError(Exception):
    """Base class: a readable, expected failure (no traceback is shown for these)."""


class DatasetError(RuntimeToolError):
    """A dataset is missing, incomplete or corrupt. The message names the path and the layout."""


class ConfigError(RuntimeToolError):
    """An unknown preset, dataset, option or executor setting."""


class BuilderUnavailable(RuntimeToolError):
    """The network builder named by a job cannot be imported."""


class ArchitectureError(Exception):
    """An architecture cannot become a network (it fails verification, breaks a constraint at the
    requested widths, or no width fits the budget): the architecture's fault, not the machine's.

    The compiler raises its subclass `BuildError`; the runtime, which must not import the compiler,
    recognises the failure by this type. Not a `RuntimeToolError`: that one is a usage error."""
