"""Source positions. Lines and columns are 1-based; end columns are exclusive.

Every construct of the language lives on one line, so sub-line syntax
(arguments, expressions) carries a `ColSpan` and takes its line from the node
or edge that holds it. That keeps parsed lines position-independent, which is
what lets the parser intern them (see nader.dsl.parser).
"""
from __future__ import annotations

from typing import NamedTuple


class ColSpan(NamedTuple):
    col: int
    end_col: int


class Span(NamedTuple):
    line: int
    col: int
    end_line: int
    end_col: int

    @classmethod
    def on_line(cls, line: int, cols: ColSpan) -> "Span":
        return cls(line, cols.col, line, cols.end_col)


NO_COLS = ColSpan(0, 0)
NO_SPAN = Span(0, 0, 0, 0)
