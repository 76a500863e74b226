"""Reading a block file: the one reader every `nadc` command goes through (`parse_file`, `fix`, `fmt`).

`nader.inputs.read_source` reads it (a regular file, `-`, or process substitution `<(...)`; a named
FIFO or a device is refused without being opened; at most the text limit's bytes plus one are
read; a byte-order mark dropped, `\\r\\n` and a bare `\\r` each one line end), and a refusal becomes
the file's one diagnostic: NAD122 past the size limit, NAD100 otherwise.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from nader.inputs.files import FileRefused, SourceText, read_source

from .diagnostics import Diagnostic
from .limits import DEFAULT_LIMITS, InputLimits, text_problem
from .parse_codes import UNREADABLE_FILE
from .span import Span

WHAT = "block file"


def read_block_file(path: Union[str, Path], limits: InputLimits = DEFAULT_LIMITS,
                    stdin=None) -> tuple[Optional[SourceText], Optional[Diagnostic]]:
    """(the file's text, None), or (None, the diagnostic saying why it was not read); `-` reads
    standard input (or `stdin`)."""
    name = "<stdin>" if str(path) == "-" else str(path)
    try:
        return read_source(path, WHAT, max_bytes=limits.text_bytes, stdin=stdin), None
    except FileRefused as error:
        problem = text_problem(error.size, limits) if error.size is not None else None
        if problem is not None:
            return None, Diagnostic(problem.code, problem.message, Span(1, 1, 1, 1), problem.help, name)
        return None, Diagnostic(UNREADABLE_FILE, f"cannot read `{name}`: {error.reason}", Span(1, 1, 1, 1),
                                "give the path of a regular file (or `-`, or `<(command)`) holding UTF-8 text",
                                name)
