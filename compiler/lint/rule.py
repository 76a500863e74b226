"""The lint rule interface: what a rule returns (`Finding`), the context it sees (`LintContext`)
and how it registers (`@rule(CODE)`).

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

The rule modules import this, not the engine (`engine.py`), which imports them all to run them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from nader.dsl.diagnostics import Code, Diagnostic, Label
from nader.dsl.ir import Block, Node, Role
from nader.dsl.ops import Op
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
