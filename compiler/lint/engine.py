"""The lint engine: the rule interface, the context rules see, and running them.

A rule is a function `check(block, ctx) -> Iterable[Finding]` registered with
`@rule(CODE)`, where CODE is declared with `define_code` in the rule's own
module (rules/<name>.py, one rule per module), or, for a verifier warning that
lint reports too (NAD206 dead nodes), imported with the check it shares from
the pass that declares it. A rule that needs symbolic
shapes says so (`@rule(CODE, needs_shapes=True)`) and is skipped unless the
caller supplies them: `ctx.shapes` is then a `ShapeResult` of
`nader.compiler.passes.shapes`, else None. `ctx.verification` likewise holds
the verifier's NAD2xx/NAD3xx diagnostics for the block when it ran, so a rule
can stay quiet about what verification already reports.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from nader.dsl.diagnostics import Code, Diagnostic, Label
from nader.dsl.ir import Block, Node, Role
from nader.dsl.ops import Op
from nader.dsl.parser import ParseResult
from nader.dsl.span import Span


@dataclass(frozen=True)
class Finding:
    """What a rule reports; the engine adds the code, file and block."""

    span: Span
    message: str
    help: Optional[str] = None
    secondary: tuple[Label, ...] = ()


@dataclass
class LintContext:
    """Everything a rule may look at besides the block itself."""

    file: str
    role: Role
    source_lines: Sequence[str] = ()
    front_end: Sequence[Diagnostic] = ()  # the parser's diagnostics for this block
    shapes: Optional[Any] = None  # ShapeResult when shape inference ran, else None
    verification: Optional[Sequence[Diagnostic]] = None  # verifier diagnostics when it ran, else None
    block: Optional[Block] = None

    # -- graph helpers (computed once per block) ----------------------------------
    @cached_property
    def _adjacency(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        inputs: dict[int, list[int]] = {}
        consumers: dict[int, list[int]] = {}
        if self.block is not None:
            for s, t, _, _ in self.block.wires():
                inputs.setdefault(t, []).append(s)
                consumers.setdefault(s, []).append(t)
        return inputs, consumers

    @cached_property
    def nodes(self) -> dict[int, Node]:
        return self.block.node_map() if self.block is not None else {}

    def inputs(self, node_id: int) -> list[int]:
        """Operands of a node, in edge order."""
        return self._adjacency[0].get(node_id, [])

    def consumers(self, node_id: int) -> list[int]:
        return self._adjacency[1].get(node_id, [])

    def op(self, node_id: int) -> Optional[Op]:
        node = self.nodes.get(node_id)
        return node.op if node is not None else None

    def verified(self, code_prefix: str, node: Optional[Node] = None) -> bool:
        """Did verification report a code starting with `code_prefix` (on `node`'s line)?"""
        for d in self.verification or ():
            if d.code.code.startswith(code_prefix) and (node is None or d.span.line == node.span.line):
                return True
        return False


@dataclass(frozen=True)
class Rule:
    code: Code
    check: Callable[[Block, LintContext], Iterable[Finding]]
    needs_shapes: bool = False
    module: str = ""


_RULES: dict[str, Rule] = {}


def consecutive_pairs(block: Block, ctx: "LintContext", group) -> Iterator[tuple]:
    """(source id, target id, source node, target node) for each edge whose two ends are both in `group`, once."""
    seen = set()
    for s, t, _, _ in block.wires():
        if (s, t) in seen or ctx.op(s) not in group or ctx.op(t) not in group:
            continue
        seen.add((s, t))
        yield s, t, ctx.nodes[s], ctx.nodes[t]


def rule(code: Code, needs_shapes: bool = False):
    """Register `check(block, ctx)` as the rule for `code` (one rule per code)."""
    def register(check: Callable[[Block, LintContext], Iterable[Finding]]):
        if code.code in _RULES:
            raise ValueError(f"lint rule for {code.code} registered twice")
        _RULES[code.code] = Rule(code, check, needs_shapes, check.__module__)
        return check
    return register


def all_rules() -> dict[str, Rule]:
    from . import rules  # noqa: F401 - importing the package loads every rule module
    return dict(sorted(_RULES.items()))


# -- suppression comments ----------------------------------------------------------------

_SUPPRESS = re.compile(r"#\s*nadc:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


def suppressions(source: str) -> dict[int, Optional[frozenset[str]]]:
    """Line -> codes suppressed on it (None: all), from `# nadc: ignore[NAD401,...]` comments.

    Codes may be given by number or name; they are upper-cased numbers or lower-case names.
    """
    out: dict[int, Optional[frozenset[str]]] = {}
    for number, line in enumerate(source.split("\n"), 1):
        if "nadc" not in line:
            continue
        for m in _SUPPRESS.finditer(line):
            codes = m.group("codes")
            if codes is None or not codes.strip():
                out[number] = None
                break
            found = frozenset(c.strip().upper() if c.strip().upper().startswith("NAD") else c.strip().lower()
                              for c in codes.split(",") if c.strip())
            previous = out.get(number, frozenset())
            out[number] = None if previous is None else previous | found
    return out


def is_suppressed(d: Diagnostic, table: dict[int, Optional[frozenset[str]]]) -> bool:
    if d.span.line not in table:
        return False
    codes = table[d.span.line]
    return codes is None or d.code.code in codes or d.code.name in codes


# -- running -------------------------------------------------------------------------------

Analyzer = Callable[[Block], tuple[Optional[Any], Optional[Sequence[Diagnostic]]]]


def lint_block(block: Block, ctx: LintContext, codes: Optional[Iterable[str]] = None) -> list[Diagnostic]:
    """Run the rules (those in `codes`, default all) on one block; suppression is not applied here."""
    ctx.block = block
    wanted = None if codes is None else set(codes)
    out: list[Diagnostic] = []
    for code, r in all_rules().items():
        if wanted is not None and code not in wanted:
            continue
        if r.needs_shapes and ctx.shapes is None:
            continue
        for f in r.check(block, ctx):
            out.append(Diagnostic(r.code, f.message, f.span, f.help, ctx.file, block.name, f.secondary))
    return out


@dataclass
class FileLint:
    """The outcome of linting one parsed file."""

    result: ParseResult
    diagnostics: list[Diagnostic] = field(default_factory=list)  # reported, after selection and suppression
    suppressed: int = 0


def lint_parsed(result: ParseResult, selected: Callable[[Diagnostic], bool],
                analyze: Optional[Analyzer] = None) -> FileLint:
    """Lint one parsed file.

    Front-end diagnostics are part of lint's output: errors always (they are not
    style, and the rules cannot be trusted on a file with syntax errors, so
    the rules do not run on one), warnings (NAD111 missing header, NAD115
    alias, NAD116 extra hashes) like any lint finding, subject to selection and
    suppression. `analyze(block)` may supply (shapes, verification diagnostics).
    """
    path = result.program.path
    lines = result.source.split("\n")
    found: list[Diagnostic] = list(result.diagnostics)
    if result.syntax_ok:
        by_block: dict[Optional[str], list[Diagnostic]] = {}
        for d in result.diagnostics:
            by_block.setdefault(d.block, []).append(d)
        for block in result.program.blocks:
            shapes, verification = analyze(block) if analyze else (None, None)
            ctx = LintContext(path, block.inferred_role(), lines, tuple(by_block.get(block.name, ())),
                              shapes, verification)
            found += lint_block(block, ctx)
    table = suppressions(result.source)
    out = FileLint(result)
    for d in found:
        if d.is_error:
            out.diagnostics.append(d)
        elif not selected(d):
            continue
        elif is_suppressed(d, table):
            out.suppressed += 1
        else:
            out.diagnostics.append(d)
    return out
