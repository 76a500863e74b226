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
