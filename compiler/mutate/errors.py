"""Why a mutation was not made."""
from __future__ import annotations


class MutationError(Exception):
    """A mutation cannot be made; the message says why, for users and logs."""


class CannotApply(MutationError):
    """This operator (or this site) cannot change this block; the caller tries another."""
