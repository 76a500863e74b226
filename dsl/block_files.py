"""Block files from disk: the one reader every `nadc` command and the language server use
(`read_block_file`), and `parse_file`, which parses what it reads (nader.dsl.parser parses text)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from nader.inputs.files import FileRefused, SourceText, read_source

from .diagnostics import Diagnostic
from .ir import Program
from .limits import DEFAULT_LIMITS, InputLimits, text_problem
from .parse_codes import UNREADABLE_FILE
from .parser import ParseResult, parse
from .span import Span


def read_block_file(path: Union[str, Path], limits: InputLimits = DEFAULT_LIMITS, stdin=None,
                    pipes: bool = True) -> tuple[Optional[SourceText], Optional[Diagnostic]]:
    """The one reader of block files, for every `nadc` command: (the file's text, None), or (None, the
    diagnostic saying why it was not read: NAD122 past the size limit, NAD100 otherwise). `-` reads
    standard input (or `stdin`). `nader.inputs.read_source` reads it: a regular file, `-` or `<(...)`;
    a named FIFO or a device refused without being opened; a byte-order mark dropped, `\r\n` and a
    bare `\r` each one line end. The language server passes `pipes=False` for a document it was not
    sent: `/dev/fd/0` is its own protocol stream."""
    name = "<stdin>" if str(path) == "-" else str(path)
    try:
        return read_source(path, "block file", max_bytes=limits.text_bytes, stdin=stdin, pipes=pipes), None
    except FileRefused as error:
        problem = text_problem(error.size, limits) if error.size is not None else None
        if problem is not None:
            return None, Diagnostic(problem.code, problem.message, Span(1, 1, 1, 1), problem.help, name)
        return None, Diagnostic(UNREADABLE_FILE, f"cannot read `{name}`: {error.reason}", Span(1, 1, 1, 1),
                                "give the path of a regular file (or `-`, or `<(command)`) holding UTF-8 text",
                                name)


def parse_file(path: Union[str, Path], limits: InputLimits = DEFAULT_LIMITS) -> ParseResult:
    """Parse a file from disk (`-`: standard input) as `read_block_file` reads it; a file it refuses
    gives that one diagnostic (NAD100, or NAD122 past the size limit, of which no more is read)."""
    source, refused = read_block_file(path, limits)
    if refused is not None:
        return ParseResult(Program((), refused.file), [refused], "", limits)
    return parse(source.text, "<stdin>" if str(path) == "-" else str(path), limits)
