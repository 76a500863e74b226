"""One lint rule per module."""
