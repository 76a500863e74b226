"""The one error of the validation layer."""
from __future__ import annotations


class InputError(ValueError):
    """A value read from outside that is refused; the message is one line naming its source."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))  # one line, whatever the pieces held
