"""Symbolic shape inference (NAD3xx), written as an interpreter over the block.

Each operation has a shape rule in `SHAPE_RULES`, keyed by `Op`; the
interpreter walks the live nodes in topological order and stores every node's
shape (a tuple of `Poly` sizes in `B C dim H W`) and facts the backends need
(for example whether a `multiply` runs with swapped operands). Verdicts hold
for every size of the domain (`contract.py`: square inputs by default): where a
block is valid only for some widths, the pass records the constraint
(`C % 4 == 0`) instead of guessing at one sample size.

Here is the walk, `ShapeInference`, a subclass of the compiler's one `Interpreter`
(`interpreter.py`) that is also the context its rules see; the rules are in `shape_rules.py`, the context a rule
sees (`ShapeContext`) in `shape_context.py`, the types (`Shape`, `ShapeResult`, `ShapeError`) in
`shape_types.py`, the codes in
`shape_codes.py`, and the checks of the sizes as a whole (can the constraints be
met, can the tensors be built) in `size_checks.py`.
"""
from __future__ import annotations

from typing import Optional

from nader.dsl.diagnostics import DiagnosticSink
from nader.dsl.expr import TupleValue
from nader.dsl.ir import Block, Node, Role
from nader.dsl.ops import Group, Op, ParamKind

from .contract import SQUARE, Contract, Domain, contract
from .interpreter import Interpreter
from .size_checks import Limits, check_constraints, check_limits
from .structure import dead_nodes, graph_facts
from .shape_codes import SIZE_LIMIT, UNSATISFIABLE  # noqa: F401 (importable from here, as before the split)
from .shape_context import ShapeContext
from .shape_types import (Shape, ShapeError, ShapeResult, _Warning,  # noqa: F401 (importable from here too)
                          evaluate_shape, shape_str)
from .shape_rules import PASS_THROUGH, SHAPE_RULES


# Successful rule applications, interned: a rule's result depends only on the node's arguments
# (the tuple parse_line shares between equal lines, kept alive here so its id stays unique),
# its input shapes, the role's contract and the constraints found before it. Errors are not
# cached: they carry spans. An entry is (args, shape, None or the rule's side effects: constraints
# added, facts, warnings). One table per contract (role, stem stride, domain: contracts are built
# once each), looked up once per block by the contract's identity, so the per-node key leaves it out.
_RULE_RESULTS: dict[int, tuple[Contract, dict[tuple, tuple]]] = {}


def _rule_results(of: Contract) -> dict[tuple, tuple]:
    hit = _RULE_RESULTS.get(id(of))
    if hit is None or hit[0] is not of or len(hit[1]) > 65_536:
        hit = _RULE_RESULTS[id(of)] = (of, {})
    return hit[1]


def infer_shapes(block: Block, role: Role, sink: DiagnosticSink, *, stem_stride: int = 1,
                 limits: Limits = Limits(), domain: Domain = SQUARE) -> ShapeResult:
    """Infer the shape of every live node in `domain`; the block must have passed the structure checks.

    Dead nodes (NAD206) are dropped when compiled, so they get no shape and no shape checks.
    """
    result = ShapeResult(role, contract(role, stem_stride, domain), domain=domain)
    return ShapeInference(block, result, sink, limits).run()


class ShapeInference(Interpreter, ShapeContext):
    """The shape walk, and the context its rules see: each node's shape by its rule in `SHAPE_RULES`.

    A rule's successful result is memoised (`_RULE_RESULTS`) with its side effects, replayed on a hit.
    """

    # ShapeContext's attributes too, so that the walk's state is all in slots (no instance dict).
    __slots__ = ("result", "env", "node", "_seen_constraints", "warnings", "sink", "limits", "constraints")

    HANDLERS = SHAPE_RULES
    PASS_THROUGH = PASS_THROUGH
    REQUIRED = Group.COMPUTE | {Op.OUTPUT}
    HANDLER_NAME = "shape rule"

    def __init__(self, block: Block, result: ShapeResult, sink: DiagnosticSink, limits: Limits = Limits()):
        facts = graph_facts(block)
        # ShapeContext's state (set here, not by a call of its __init__: once per verified block).
        self.block, self.result, self.env, self.node = block, result, result.contract.env, None
        self._seen_constraints: set[tuple] = set()
        self.warnings: list = []
        self.nodes, self.sources = facts.nodes, facts.inputs
        self.values = self.inputs_from = result.shapes
        self.terminals = result.contract.inputs
        self.sink, self.limits = sink, limits
        self.constraints = result.constraints
        dead = dead_nodes(block)
        order = self.order = result.order = block.topological_order() or []
        if dead:
            order[:] = [i for i in order if i not in dead]
        if facts.floordiv:  # only `//` depends on constraints found elsewhere in the block
            _prescan_sizes(self, block)
        # A rule's result depends on the constraints found before it: the memo's state, kept equal to them.
        self.memo_state = tuple(self.constraints)
        # The memo is shared by walks with the same rules; a subclass with rules of its own keeps its own.
        self.memo = _rule_results(result.contract) if self.HANDLERS is SHAPE_RULES else {}

    def input(self, node: Node) -> Shape:
        return self.terminals[node.op]

    def blocked(self, node: Node) -> None:
        self.result.failed = True  # an upstream node failed; it was reported there

    def run_node(self, node: Node, inputs: tuple) -> Optional[Shape]:
        """A node's shape by its rule (not memoised yet: `run` looked), memoised when it succeeds."""
        key = (node.op_name, id(node.args), inputs, self.memo_state)
        constraints = self.constraints
        self.node = node
        before = len(constraints)
        self.warnings = []
        try:
            shape = self.HANDLERS[node.op](self, node, inputs)  # type: ignore[index]
        except _Warning as warning:
            self.sink.emit(warning.code, warning.message, node.span, warning.help, self.block.name)
            return warning.shape
        except ShapeError as error:
            self.result.failed = True
            self.sink.emit(error.code, error.message, error.span or node.span, error.help, self.block.name,
                           error.labels)
            return None
        finally:
            if len(constraints) != len(self.memo_state):
                self.memo_state = tuple(constraints)
        for code, message, help_text in self.warnings:
            self.sink.emit(code, message, node.span, help_text, self.block.name)
        side_effects = (tuple(constraints[before:]), dict(self.result.facts.get(node.id, {})), tuple(self.warnings))
        self.memo[key] = (node.args, shape, side_effects if any(side_effects) else None)
        return shape

    def replay(self, node: Node, side_effects: tuple) -> None:
        """A memoised rule's side effects, as the rule had them: constraints, facts and warnings."""
        added, facts, warnings = side_effects
        if added:
            for c in added:
                self.add_constraint(c)
            self.memo_state = tuple(self.constraints)
        if facts:
            self.result.facts[node.id] = dict(facts)
        for code, message, help_text in warnings:
            self.sink.emit(code, message, node.span, help_text, self.block.name)

    def finish(self) -> ShapeResult:
        result = self.result
        if not result.failed:
            check_constraints(self.block, result, self.sink)
            check_limits(self.block, result, self.sink, self.limits)
        return result


def _prescan_sizes(ctx: ShapeContext, block: Block) -> None:
    """Collect exact-division constraints first, so `//` simplifies the same whatever the line order."""
    for node in block.nodes:
        d = node.opdef
        if d is None:
            continue
        ctx.node = node
        for p in d.params:
            if p.kind not in (ParamKind.SIZE, ParamKind.SHAPE) or p.name not in node.params:
                continue
            value = node.params[p.name]
            for item in (value.items if isinstance(value, TupleValue) else (value,)):
                try:
                    ctx.size(item, f"`{p.name}`")
                except (ShapeError, KeyError, TypeError):
                    pass  # reported when the node's rule runs
    ctx.node = None  # type: ignore[assignment]
