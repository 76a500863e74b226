"""Symbolic shape inference (NAD3xx), written as an interpreter over the block.

Each operation has a shape rule in `SHAPE_RULES`, keyed by `Op`; the
interpreter walks the live nodes in topological order and stores every node's
shape (a tuple of `Poly` sizes in `B C dim H W`) and facts the backends need
(for example whether a `multiply` runs with swapped operands). Verdicts hold
for every size of the domain (`contract.py`: square inputs by default): where a
block is valid only for some widths, the pass records the constraint
(`C % 4 == 0`) instead of guessing at one sample size.

Here is the interpreter; the rules are in `shape_rules.py`, the context a rule
sees (`ShapeContext`) in `shape_context.py`, the types (`Shape`, `ShapeResult`, `ShapeError`) in
`shape_types.py`, the codes in
`shape_codes.py`, and the checks of the sizes as a whole (can the constraints be
met, can the tensors be built) in `size_checks.py`.
"""
from __future__ import annotations

from nader.dsl.diagnostics import DiagnosticSink
from nader.dsl.expr import TupleValue
from nader.dsl.ir import Block, Role
from nader.dsl.ops import ParamKind

from .contract import SQUARE, Contract, Domain, contract
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
    ctx = ShapeContext(block, result)
    facts = graph_facts(block)
    nodes, sources = facts.nodes, facts.inputs
    shapes = result.shapes
    constraints = result.constraints
    terminals = result.contract.inputs
    dead = dead_nodes(block)
    order = result.order = block.topological_order() or []
    if dead:
        order[:] = [i for i in order if i not in dead]
    if facts.floordiv:  # only `//` depends on constraints found elsewhere in the block
        _prescan_sizes(ctx, block)
    rule_results = _rule_results(result.contract)
    shape_of = shapes.get
    for node_id in order:
        node = nodes[node_id]
        op = node.op
        if op in terminals:
            shapes[node_id] = terminals[op]
            continue
        operands = sources.get(node_id, ())
        # Most nodes have one input: a tuple display costs a third of `tuple(map(...))`.
        inputs = (shape_of(operands[0]),) if len(operands) == 1 else tuple(map(shape_of, operands))
        if None in inputs:
            result.failed = True
            continue  # an upstream node failed; it was reported there
        if op in PASS_THROUGH:
            shapes[node_id] = inputs[0]
            continue
        key = (node.op_name, id(node.args), inputs, tuple(constraints))
        hit = rule_results.get(key)
        if hit is not None and hit[0] is node.args:
            shapes[node_id] = hit[1]
            if hit[2] is not None:
                added, facts, warnings = hit[2]
                for c in added:
                    ctx.add_constraint(c)
                if facts:
                    result.facts[node_id] = dict(facts)
                for code, message, help_text in warnings:
                    sink.emit(code, message, node.span, help_text, block.name)
            continue
        ctx.node = node
        before = len(constraints)
        ctx.warnings = []
        try:
            shape = SHAPE_RULES[op](ctx, node, inputs)  # type: ignore[arg-type,index]
            shapes[node_id] = shape
            for code, message, help_text in ctx.warnings:
                sink.emit(code, message, node.span, help_text, block.name)
            side_effects = (tuple(constraints[before:]), dict(result.facts.get(node_id, {})), tuple(ctx.warnings))
            rule_results[key] = (node.args, shape, side_effects if any(side_effects) else None)
        except _Warning as warning:
            sink.emit(warning.code, warning.message, node.span, warning.help, block.name)
            shapes[node_id] = warning.shape
        except ShapeError as error:
            result.failed = True
            sink.emit(error.code, error.message, error.span or node.span, error.help, block.name, error.labels)
    if not result.failed:
        check_constraints(block, result, sink)
        check_limits(block, result, sink, limits)
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
