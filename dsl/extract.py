"""Pulling block text out of an LLM reply.

LLM agents answer with prose around their blocks, fence them in markdown,
write `###Name###` headers and sometimes leave the fences out. The compiler
itself is strict (a fence in a block file is NAD108); this module is the one
place that guesses, and it says what it threw away so an agent can be told.

How each line of the reply is judged (leading and trailing blanks ignored):

1. **Fences.** A line of three or more backticks or tildes, optionally with
   an info string (```` ```text ````, ```` ```nad ````, `~~~`), opens a fence;
   a line of the same character, at least as long and with nothing after it,
   closes it. A fence left open runs to the end of the reply. Fence lines
   themselves and blank lines are never reported.
2. **Block lines.** A line is a block line when the language's own line
   parser (`nader.dsl.parser.parse_line`) reads it as a header, a node or an
   edge, unknown operations included (the parser reports those later). So
   `1:output` and `0,1->4` are block lines, and "Here is the block:",
   "## Explanation" or "2:Conv2d(...) - a 3x3 conv" are not. A line that is
   only a `# comment` is a comment line.
3. **Fenced blocks.** A fence holding at least one block line is a *block
   fence*: its block and comment lines are kept, anything else in it is
   dropped ("not a block line"). A fence without any block line (Python,
   JSON, shell) is dropped whole.
4. **Unfenced blocks.** Outside fences, a *run* is a stretch of block,
   comment and blank lines between two other lines. Comment lines are kept
   only between two block lines of their run (a markdown `# Title` above a
   block is prose). When the reply has block fences, an unfenced run is
   kept only if it is a whole block: it starts with a header and holds a
   node or an edge; stray block-like lines in the prose around fenced blocks
   ("change `5:ReLU` to ...") are dropped. Without block fences every run is
   kept, except node lines with a named id that no edge of the run
   mentions: "Answer: ReLU" or "Note: BN" after a block read as nodes, but
   are prose.
5. **Everything else** outside fences is prose and dropped.
6. **Headers** with three or more hashes are rewritten to `##Name##`, and a
   header wrapped whole in markdown emphasis or code (`**##Name##**`,
   `` `##Name##` ``) is unwrapped; a header followed by no node or edge
   before the next header (or the end) is dropped ("header without nodes
   or edges").

Kept lines are stripped of surrounding blanks, joined with `\\n` in reply
order (blank lines dropped) and end with a newline: `Extraction.text` is
ready for `parse`. Several blocks, in one fence or several, simply follow
one another. Nothing is evaluated.

A reply past the input limits (nader.dsl.limits: its size, a line's length or
digits, the node lines after one header, the edges into one node) is refused
before the work they bound, with the compiler's codes (NAD118-NAD122):
`Extraction.problems` holds the diagnostic and nothing is extracted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from .diagnostics import Diagnostic
from .limits import DEFAULT_LIMITS, InputLimits, inputs_problem, line_problem, nodes_problem, text_problem, text_size
from .parse_codes import Problem
from .parser import ChainLine, EdgeLine, HeaderLine, NodeLine, parse_line
from .span import ColSpan, Span

__all__ = ["Dropped", "Extraction", "extract_blocks"]

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>.*)$")

_HEADER, _NODE, _EDGE, _COMMENT, _BLANK, _PROSE = "header", "node", "edge", "comment", "blank", "prose"
_BLOCK_KINDS = (_HEADER, _NODE, _EDGE)


class Dropped(NamedTuple):
    """A line of the reply that is not part of the extracted text."""

    line: int  # 1-based line number in the reply
    text: str  # the line as written (without its line end)
    reason: str


@dataclass
class Extraction:
    text: str  # the block text, ready for `parse`
    blocks: list[str] = field(default_factory=list)  # header names, in order
    dropped: list[Dropped] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)  # a limit the reply broke: nothing extracted

    def __bool__(self) -> bool:
        return bool(self.text)

    def summary(self, limit: int = 5) -> str:
        """One short paragraph for an agent: what was ignored, and why."""
        if self.problems:
            return "the reply was not read: " + "; ".join(f"line {d.span.line}: {d.message}" for d in self.problems)
        if not self.dropped:
            return "all non-blank lines of the reply were used"
        shown = [f"line {d.line} `{_shorten(d.text)}` ({d.reason})" for d in self.dropped[:limit]]
        more = len(self.dropped) - len(shown)
        tail = f"; and {more} more" if more else ""
        return f"ignored {len(self.dropped)} line{'s' if len(self.dropped) != 1 else ''} of the reply: " \
               + "; ".join(shown) + tail


def _shorten(text: str, width: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class _Line:
    number: int
    raw: str
    kind: str
    text: str  # the normalised text to keep
    fence: Optional[int] = None  # index of the fence holding the line
    header: Optional[str] = None
    ids: tuple = ()  # node lines: the id; edge lines: every id they name
    wires: tuple = ()  # edge lines: (target, number of sources) of each edge (a chain has several)


_EMPHASIS = re.compile(r"^(\*\*|__|`)(?P<inner>#{2,}[^#`*]*#{2,})\1$")


def _classify(number: int, raw: str) -> _Line:
    stripped = raw.strip()
    if not stripped:
        return _Line(number, raw, _BLANK, "")
    emphasised = _EMPHASIS.match(stripped)
    if emphasised and isinstance(parse_line(emphasised.group("inner")).item, HeaderLine):
        stripped = emphasised.group("inner")  # **##Name##** or `##Name##`
    parsed = parse_line(stripped)
    item = parsed.item
    if isinstance(item, HeaderLine):
        text = f"##{item.name}##" + (f"  {parsed.comment}" if parsed.comment else "")
        return _Line(number, raw, _HEADER, text if item.hashes > 2 else stripped, header=item.name)
    if isinstance(item, NodeLine):
        return _Line(number, raw, _NODE, stripped, ids=(item.id,))
    if isinstance(item, EdgeLine):
        return _Line(number, raw, _EDGE, stripped, ids=(*item.sources, item.target),
                     wires=((item.target, len(item.sources)),))
    if isinstance(item, ChainLine):
        return _Line(number, raw, _EDGE, stripped, ids=(*item.edges[0].sources, *(e.target for e in item.edges)),
                     wires=tuple((e.target, len(e.sources)) for e in item.edges))
    if item is None and parsed.comment is not None and not parsed.problems:
        return _Line(number, raw, _COMMENT, stripped)
    return _Line(number, raw, _PROSE, stripped)


def extract_blocks(reply: str, limits: InputLimits = DEFAULT_LIMITS) -> Extraction:
    """The block text in an LLM reply (see the module docstring for the rules)."""
    if len(reply) * 4 > limits.text_bytes:  # a character is at most 4 bytes
        too_large = text_problem(text_size(reply), limits)
        if too_large is not None:
            return _refused(too_large, 1, None)
    raw_lines = [line[:-1] if line.endswith("\r") else line for line in reply.split("\n")]
    header: Optional[str] = None  # the last header's name, and what its block holds so far
    nodes, inputs = 0, {}
    lines: list[_Line] = []
    dropped: list[Dropped] = []
    fence_lines: set[int] = set()
    open_fence: Optional[str] = None
    fence_index = -1
    for number, raw in enumerate(raw_lines, 1):
        stripped = raw.strip()
        marker = _FENCE.match(stripped)
        if open_fence is None and marker and "`" not in marker.group("info"):
            open_fence = marker.group("fence")
            fence_index += 1
            fence_lines.add(number)
            continue
        if open_fence is not None and marker and not marker.group("info").strip() \
                and marker.group("fence")[0] == open_fence[0] and len(marker.group("fence")) >= len(open_fence):
            open_fence = None
            fence_lines.add(number)
            continue
        problem = line_problem(raw, limits)  # before the line is read
        if problem is not None:
            return _refused(problem, number, header)
        line = _classify(number, raw)
        line.fence = fence_index if open_fence is not None else None
        lines.append(line)
        if line.kind == _HEADER:
            header, nodes, inputs = line.header, 0, {}
        elif line.kind == _NODE:
            nodes += 1
            if nodes > limits.nodes_per_block:
                return _refused(nodes_problem(header or "block", _whole(raw), limits), number, header)
        elif line.kind == _EDGE:
            for target, count in line.wires:
                inputs[target] = inputs.get(target, 0) + count
                if inputs[target] > limits.inputs_per_node:
                    return _refused(inputs_problem(target, _whole(raw), limits), number, header)

    block_fences = {l.fence for l in lines if l.fence is not None and l.kind in _BLOCK_KINDS}
    keep: dict[int, bool] = {}  # line number -> kept
    reasons: dict[int, str] = {}

    # Fenced lines.
    for l in lines:
        if l.fence is None or l.kind == _BLANK:
            continue
        if l.fence not in block_fences:
            reasons[l.number] = "in a code fence without block lines"
        elif l.kind == _PROSE:
            reasons[l.number] = "not a block line"
        else:
            keep[l.number] = True

    # Unfenced runs.
    run: list[_Line] = []
    for l in lines + [_Line(0, "", _PROSE, "")]:  # a sentinel closes the last run
        if l.fence is None and l.kind != _PROSE:
            run.append(l)
            continue
        _judge_run(run, bool(block_fences), keep, reasons)
        run = []
        if l.fence is None and l.number:
            reasons[l.number] = "prose"

    # Headers with nothing under them.
    kept = [l for l in lines if keep.get(l.number)]
    for index, l in enumerate(kept):
        if l.kind != _HEADER:
            continue
        following = next((k for k in kept[index + 1:] if k.kind in _BLOCK_KINDS), None)
        if following is None or following.kind == _HEADER:
            keep[l.number] = False
            reasons[l.number] = "header without nodes or edges"

    for l in lines:
        if l.number in reasons and not keep.get(l.number):
            dropped.append(Dropped(l.number, l.raw, reasons[l.number]))
    kept = [l for l in lines if keep.get(l.number)]
    text = "".join(l.text + "\n" for l in kept)
    return Extraction(text, [l.header for l in kept if l.kind == _HEADER and l.header], dropped)


def _whole(raw: str) -> ColSpan:
    start = len(raw) - len(raw.lstrip()) + 1
    return ColSpan(start, len(raw.rstrip()) + 1)


def _refused(problem: Problem, number: int, header: Optional[str]) -> Extraction:
    """A reply past a limit: nothing extracted, the limit's diagnostic (its line is the reply's)."""
    return Extraction("", [], [], [Diagnostic(problem.code, problem.message, Span.on_line(number, problem.cols),
                                              problem.help, block=header)])


def _judge_run(run: list[_Line], fenced_reply: bool, keep: dict[int, bool], reasons: dict[int, str]) -> None:
    block = [l for l in run if l.kind in _BLOCK_KINDS]
    if not run:
        return
    if not block:
        for l in run:
            if l.kind == _COMMENT:
                reasons[l.number] = "comment or markdown heading outside a block"
        return
    whole = block[0].kind == _HEADER and any(l.kind in (_NODE, _EDGE) for l in block)
    if fenced_reply and not whole:
        for l in run:
            if l.kind != _BLANK:
                reasons[l.number] = "block line outside the code fences"
        return
    # Prose can read as a node with a named id ("Answer: ReLU", "Note: BN"); a node line whose
    # name no edge of its run mentions is taken for prose. Integer ids stay: the compiler reports them.
    mentioned = {i for l in block if l.kind == _EDGE for i in l.ids}
    prose_like = {l.number for l in block if l.kind == _NODE and isinstance(l.ids[0], str) and l.ids[0] not in mentioned}
    for l in block:
        if l.number in prose_like:
            reasons[l.number] = "prose (a named node that no edge mentions)"
    block = [l for l in block if l.number not in prose_like]
    if not block:
        return
    first, last = block[0].number, block[-1].number
    for l in run:
        if l.number in prose_like:
            continue
        if l.kind in _BLOCK_KINDS:
            keep[l.number] = True
        elif l.kind == _COMMENT:
            if first < l.number < last:
                keep[l.number] = True
            else:
                reasons[l.number] = "comment or markdown heading outside a block"
