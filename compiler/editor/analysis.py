"""One analysis of a file's text: the parse, `verify`'s reports and `lint`'s findings, merged.

The same library calls as `nadc verify` (each stem at the stride it has, square sizes, the repairs
it suggests for errors) and
`nadc lint` (the selection of the nearest `[tool.nadc.lint]`), under the input limits of the
nearest `[tool.nadc.limits]`, so an editor shows what the command line prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from nader.compiler.lint.config import LintConfigError, selection_for
from nader.compiler.lint.engine import lint_parsed
from nader.compiler.passes import SQUARE, BlockReport, Limits, verify_program
from nader.compiler.repair import suggest_fixes
from nader.dsl.diagnostics import Diagnostic, sort_key
from nader.dsl.ir import Block, Edge, Node
from nader.dsl.limits import DEFAULT_LIMITS, InputLimits, LimitsError, limits_for
from nader.dsl.block_files import read_block_file
from nader.dsl.parser import ParseResult, parse
from nader.inputs import InputError


@dataclass
class Analysis:
    """What the passes found in one version of a file."""

    path: str
    parsed: ParseResult
    reports: list[BlockReport] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)  # verify's, then lint's own, in file order
    verify_diagnostics: list[Diagnostic] = field(default_factory=list)  # exactly `nadc verify`'s
    config_error: Optional[str] = None  # a pyproject.toml the analysis could not use
    limits: InputLimits = DEFAULT_LIMITS

    @property
    def lines(self) -> list[str]:
        return self.parsed.source.split("\n")

    def block_at(self, line: int) -> Optional[Block]:
        """The block whose lines hold `line` (from its header to the next block's)."""
        found = None
        for block in self.parsed.program.blocks:
            if block.header_span.line <= line:
                found = block
        return found

    def report_of(self, block: Block) -> Optional[BlockReport]:
        return next((r for r in self.reports if r.block is block), None)

    def item_at(self, line: int) -> tuple[Optional[Block], Optional[Node], Optional[Edge]]:
        """The block, and the node or edge written on `line`."""
        block = self.block_at(line)
        if block is None:
            return None, None, None
        node = next((n for n in block.nodes if n.span.line == line), None)
        edge = None if node else next((e for e in block.edges if e.span.line == line), None)
        return block, node, edge


def analyze_document(text: str, path: str) -> Analysis:
    """Parse, verify and lint `text`, the content of `path` (which need not exist on disk)."""
    config_error = None
    try:
        limits = limits_for(path)
    except LimitsError as error:
        limits, config_error = DEFAULT_LIMITS, str(error)
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    parsed = parse(text, path, limits)  # bounds the text itself: past `text-bytes`, NAD122 and no blocks
    reports, file_level = verify_program(parsed, stem_stride=None)
    # the repairs `nadc verify` attaches to errors without a fix (only files with errors pay for them)
    suggest_fixes(text, reports, file_level, role=None, stem_stride=None, limits=Limits(), domain=SQUARE, path=path,
                  input_limits=limits)
    verified = list(file_level)
    for report in reports:
        verified.extend(report.diagnostics)
    out = Analysis(path, parsed, reports, [], verified, config_error, limits)
    try:
        selection = selection_for(path)
    except LintConfigError as error:
        out.config_error = out.config_error or str(error)
        selection = None
    seen = {_key(d) for d in verified}
    linted = lint_parsed(parsed, selection).diagnostics if selection is not None else []
    out.diagnostics = sorted(verified + [d for d in linted if _key(d) not in seen], key=sort_key)
    return out


def analyze_file(path: str) -> Analysis:
    """`analyze_document` of a file on disk (a document the editor has not opened). Only a regular file of at
    most the `text-bytes` limit is read: InputError for a FIFO, a device or a larger file, which
    would block the server or fill its memory. The one place the editor reads a file."""
    if "\0" in path:  # the operating system takes no such path: say so rather than fail in `stat`
        raise InputError(f"{path!r}: a path with a NUL character names no file")
    try:
        limits = limits_for(path)
    except LimitsError:
        limits = DEFAULT_LIMITS
    # `-` would be standard input, which is the protocol's stream; and no pipe is the document's
    source, refused = read_block_file("./-" if path == "-" else path, limits, pipes=False)
    if refused is not None:
        raise InputError(refused.message)
    return analyze_document(source.text, path)


def _key(d: Diagnostic) -> tuple:
    return d.code.code, d.span, d.message
