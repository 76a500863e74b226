"""The canonical form of block files (`nadc fmt`), and renumbering.

The canonical form is NADER's own style, so NADER's files are already
canonical except for the final newline:

* a block starts with its header `##Name##`: exactly two hashes on each side;
* then every node line, in file order: `id:op(args)` with no spaces,
  `2:Conv2d(out_channels=C,kernel_size=3,stride=1)`. The operation is spelled
  by its canonical name (aliases such as `Concat` become `concat`); arguments
  keep the order, and keyword or positional form, they were written in;
  expressions are printed with the fewest parentheses that parse back to the
  same tree (`str()` of the expression classes); an empty argument list is
  dropped (`3:BN()` becomes `3:BN`);
* then every edge line, in file order: `a->b`, or `a,b->c` kept as written,
  since the order of edges is the order of operands; a chain `a->b->c` is
  written as its edges, one a line (the parser reads it as those edges);
* comments stay where they were: a comment line is printed on its own line
  before the header, node or edge it preceded, a comment after an item
  follows it after two spaces (`4:ReLU  # gate`), and comment lines at the
  end of the last block stay at its end;
* no blank lines, neither inside a block nor between blocks (NADER's files
  have none; the header is what separates blocks);
* lines end with `\\n` and the file ends with one.

Formatting never changes meaning: `parse(format_program(p)).program == p`
for every program the parser produces (IR equality ignores spans).
`format_source` additionally re-parses its own output and refuses to format
when that check fails, so a formatter bug can never corrupt a file.

Files with syntax errors (`ParseResult.syntax_ok` is False) are not
formatted: a line the parser could not read would be lost. Unknown
operations, parameters and symbols are fine: they are printed as written.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from .diagnostics import Diagnostic
from .ir import Block, Edge, Node, NodeId, Program
from .ops import Op, lookup
from .limits import DEFAULT_LIMITS, InputLimits
from .parse_codes import SYNTAX_CODES
from .parser import ParseResult, header_name, parse

__all__ = ["FormatResult", "duplicate_ids", "format_block", "format_program", "format_source", "id_map",
           "is_formatted", "renumber", "renumber_program", "renumbering"]


def _with_comment(text: str, comment: Optional[str]) -> str:
    return f"{text}  {comment}" if comment else text


def node_text(node: Node) -> str:
    """`id:op(args)` in canonical spelling, without comment."""
    d = lookup(node.op_name)
    op_name = d.name if d is not None else node.op_name
    if not node.args:
        return f"{node.id}:{op_name}"
    return f"{node.id}:{op_name}({','.join(str(a) for a in node.args)})"


def edge_text(edge: Edge) -> str:
    return f"{','.join(map(str, edge.sources))}->{edge.target}"


def format_block_lines(block: Block) -> list[str]:
    lines: list[str] = list(block.leading_comments)
    lines.append(_with_comment(f"##{header_name(block.name)}##", block.header_comment))
    for item, text in [(n, node_text(n)) for n in block.nodes] + [(e, edge_text(e)) for e in block.edges]:
        lines.extend(item.leading_comments)
        lines.append(_with_comment(text, item.comment))
    lines.extend(block.trailing_comments)
    return lines


def format_block(block: Block) -> str:
    """One block in canonical form, ending with a newline."""
    return "\n".join(format_block_lines(block)) + "\n"


def format_program(program: Program) -> str:
    """The whole program in canonical form (see the module docstring).

    Comment lines at the end of a block that is not the last one are printed
    there, but re-parse as leading comments of the next block (the parser
    attaches a comment line to the item that follows it).
    """
    return "".join(format_block(b) for b in program.blocks)


# -- renumbering ------------------------------------------------------------------

_SOURCE_RANK = {Op.INPUT: 0, Op.INPUT1: 1, Op.INPUT2: 2}


def duplicate_ids(block: Block) -> list[NodeId]:
    """Ids that more than one node line defines, in file order."""
    seen: set[NodeId] = set()
    twice: list[NodeId] = []
    for n in block.nodes:
        if n.id in seen and n.id not in twice:
            twice.append(n.id)
        seen.add(n.id)
    return twice


def renumbering(block: Block) -> list[tuple[Node, int]]:
    """Each node line with its new id, in file order; see `renumber`."""
    position = {id(n): k for k, n in enumerate(block.nodes)}
    firsts = block.node_map()  # where an id is defined twice, edges mean the first definition
    sources = sorted((n for n in firsts.values() if n.op in _SOURCE_RANK),
                     key=lambda n: (_SOURCE_RANK[n.op], position[id(n)]))
    sinks = [n for n in firsts.values() if n.op is Op.OUTPUT]
    first = [n.id for n in sources] + [n.id for n in sinks]
    order = block.topological_order() or list(firsts)
    placed = set(first)
    ranked = first + [i for i in order if i not in placed]
    new_id = {old: new for new, old in enumerate(ranked)}
    result: list[tuple[Node, int]] = []
    extra = len(new_id)
    for n in block.nodes:
        if firsts[n.id] is n:
            result.append((n, new_id[n.id]))
        else:  # a second definition of an id: no edge can name it
            result.append((n, extra))
            extra += 1
    return result


def id_map(block: Block) -> dict[NodeId, int]:
    """Old id -> new id as `renumber` rewrites edges (first definitions; then ids no node defines)."""
    firsts = block.node_map()
    mapping = {n.id: new for n, new in renumbering(block) if firsts[n.id] is n}
    fresh = len(block.nodes)
    for e in block.edges:
        for i in (*e.sources, e.target):
            if i not in mapping:
                mapping[i] = fresh
                fresh += 1
    return mapping


def renumber(block: Block) -> Block:
    """The block with its nodes numbered 0, 1, 2, ...

    Input terminals come first (`input`, or `input1` then `input2`; file
    order among equals), then `output`, then the other nodes in topological
    order (`Block.topological_order`, file order breaking ties; plain file
    order when the block has a cycle). Node lines are listed by their new ids,
    each keeping its comments; edge lines keep their order (the operand
    order), their ids rewritten. Ids that edges name but no node defines get
    numbers after all nodes. Where two nodes share an id, edges keep meaning
    the first one (as everywhere in the compiler) and the second gets a fresh
    id of its own (`duplicate_ids` tells which). Spans are kept.
    """
    mapping = id_map(block)
    nodes = sorted((replace(n, id=new) for n, new in renumbering(block)), key=lambda n: n.id)
    edges = [replace(e, sources=tuple(mapping[s] for s in e.sources), target=mapping[e.target])
             for e in block.edges]
    return replace(block, nodes=tuple(nodes), edges=tuple(edges))


def renumber_program(program: Program) -> Program:
    return replace(program, blocks=tuple(renumber(b) for b in program.blocks))


# -- files -------------------------------------------------------------------------

@dataclass
class FormatResult:
    """The outcome of formatting one source text.

    `text` is the canonical text, or None when the source cannot be formatted
    (`diagnostics` says why: syntax errors, or `error` for a failed
    self-check). `notes` are warnings about a successful result (a block
    renumbered despite duplicate ids). `changed` compares with the source
    byte for byte, so CRLF line ends or a missing final newline count.
    """

    source: str
    parsed: ParseResult
    text: Optional[str] = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: Optional[str] = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def changed(self) -> bool:
        return self.text is not None and self.text != self.source


def _syntax_diagnostics(result: ParseResult) -> list[Diagnostic]:
    return [d for d in result.diagnostics if d.code in SYNTAX_CODES]


def format_source(source: str, path: str = "<string>", *, renumber_ids: bool = False,
                  parsed: Optional[ParseResult] = None, limits: InputLimits = DEFAULT_LIMITS) -> FormatResult:
    """Format `source` (the text of one file) under the input limits; never raises on bad input."""
    result = parsed if parsed is not None else parse(source, path, limits)
    out = FormatResult(source, result)
    if not result.syntax_ok:
        out.diagnostics = _syntax_diagnostics(result)
        return out
    # Only a block named after its file can have a name a header cannot spell.
    program = replace(result.program, blocks=tuple(replace(b, name=header_name(b.name))
                                                   for b in result.program.blocks))
    if renumber_ids:
        for b in program.blocks:
            if twice := duplicate_ids(b):
                out.notes.append(f"block `{b.name}` defines node{'s' if len(twice) > 1 else ''} "
                                 f"{', '.join(map(str, twice))} more than once: edges keep meaning the first "
                                 "definition, later ones get new ids of their own")
        program = renumber_program(program)
    text = format_program(program)
    check = parse(text, path, limits)
    if not check.syntax_ok or check.program != program:
        out.error = ("the canonical text would not parse back to the same program "
                     "(a number too large to print, or a formatter bug); the file is left as it is")
        return out
    out.text = text
    return out


def is_formatted(source: str, path: str = "<string>") -> bool:
    result = format_source(source, path)
    return result.ok and not result.changed
