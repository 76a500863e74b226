"""One validation layer for every value read from outside: files, TOML, JSON, CSV, cells, flags.

Floor 0 and imports nothing of the project, so every package may use it. Each check raises
`InputError` (a ValueError) with one line naming the source (`what`) and what to do; callers turn it
into their diagnostic (exit 2 in the command lines) without a traceback. Numbers come out finite and
in range, text UTF-8 and bounded, files regular and bounded, nesting bounded (checked by a scanner
before parsing, so no parser recursion is reached). Source texts (block files) are read by
`read_source` (universal newlines, `-`, process substitution); every file the tools write is written by
`nader.inputs.writes.write_file` (temporary file, fsync, rename: a failure leaves the old file as it
was), and a command with several outputs claims them first (`claim_outputs`: no two outputs on one
file); it is not imported here, so that `nadc verify`, which writes nothing, does not load it.
"""
from .errors import InputError
from .files import DEFAULT_MAX_BYTES, FileRefused, SourceText, read_bounded_bytes, read_bounded_text, read_source
from .numbers import bounded_str, finite_number, non_negative, positive
from .structured import (DEFAULT_MAX_DEPTH, DEFAULT_MAX_FIELD_CHARS, DEFAULT_MAX_NUMBER_DIGITS, check_depth,
                         csv_rows, load_json, load_toml, nesting_depth)

__all__ = ["InputError", "DEFAULT_MAX_BYTES", "FileRefused", "SourceText", "read_bounded_bytes", "read_bounded_text",
           "read_source", "bounded_str",
           "finite_number", "non_negative", "positive", "DEFAULT_MAX_DEPTH", "DEFAULT_MAX_FIELD_CHARS",
           "DEFAULT_MAX_NUMBER_DIGITS", "check_depth", "csv_rows", "load_json", "load_toml", "nesting_depth"]
