"""Helpers the fix kinds share."""
from __future__ import annotations

from typing import Iterable, Optional

from nader.dsl.diagnostics import DiagnosticSink
from nader.dsl.expr import constant_int
from nader.dsl.ir import Node
from nader.dsl.ops import Group, Op
from nader.dsl.parser import read_in_block

from ...passes.contract import contract
from ...passes.shape_rules import SHAPE_RULES
from ...passes.shape_types import ShapeResult, evaluate_shape
from ...passes.shapes import ShapeInference
from ...passes.structure import graph_facts
from ...passes.symbolic import ONE, assume_exact
from ..context import TARGET_WARNINGS


def overfed_node(ctx, diagnostic) -> Optional[Node]:
    """The node a NAD207/NAD205 diagnostic says gets more inputs than its one."""
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return None
    count = len(ctx.inputs(node.id))
    if node.op is Op.OUTPUT:
        return node if count > 1 else None
    arity = node.opdef.arity
    return node if arity.max == 1 and count > 1 else None


def underfed_merge(ctx, diagnostic) -> Optional[Node]:
    """The node a NAD207 diagnostic says is a merge (`Add`, `concat`, ...) with a single input."""
    node = ctx.node_at(diagnostic)
    if node is None or node.opdef is None:
        return None
    return node if node.opdef.arity.min >= 2 and len(ctx.inputs(node.id)) == 1 else None


#: Sizes at which shapes are compared and ratios measured (any generic point works: the
#: engine verifies every candidate symbolically).
PROBE = {"B": 2, "C": 48, "dim": 96, "H": 96, "W": 96}


#: Shapes at the probe sizes, by shape (its sizes are interned): the kinds ask for the same ones often.
_SIZES: dict[tuple, Optional[tuple]] = {}


def sizes(shape) -> Optional[tuple]:
    """A symbolic shape at the probe sizes; None when it cannot be evaluated."""
    if shape is None:
        return None
    found = _SIZES.get(shape, _SIZES)
    if found is not _SIZES:
        return found
    try:
        found = tuple(evaluate_shape(shape, PROBE))
    except (ArithmeticError, KeyError, TypeError, ValueError):
        found = None
    if len(_SIZES) > 4096:
        _SIZES.clear()
    _SIZES[shape] = found
    return found


def with_arg(node: Node, name: str, value: Optional[str]) -> str:
    """`node`'s operation text with parameter `name` set to `value` (None: removed)."""
    args, done = [], False
    written = node.arg(name)
    for a in node.args:
        if a is written:
            done = True
            if value is not None:
                args.append(f"{a.name}={value}" if a.name else value)
        else:
            args.append(str(a))
    if not done and value is not None:
        args.append(f"{name}={value}")
    return f"{node.op_name}({','.join(args)})" if args else node.op_name


def merge_node(ctx, diagnostic) -> Optional[Node]:
    """The node (with two or more inputs) a shape diagnostic points at."""
    node = ctx.node_at(diagnostic)
    return node if node is not None and len(ctx.inputs(node.id)) >= 2 else None


def merge_operands(ctx, diagnostic) -> Optional[tuple[Node, list, list]]:
    """(the merge a shape diagnostic points at, its operands, their 4-d sizes at the probe), or None where
    one of them is not a 4-d tensor of known shape."""
    merge = merge_node(ctx, diagnostic)
    if merge is None:
        return None
    operands, shapes = operands_of(ctx, merge)
    return None if any(s is None or len(s) != 4 for s in shapes) else (merge, operands, shapes)


def node_of(ctx, diagnostic, op: Op) -> Optional[Node]:
    """The node the diagnostic points at, where it is an `op`."""
    node = ctx.node_at(diagnostic)
    return node if node is not None and node.op is op else None


def operands_of(ctx, node: Node) -> tuple[list, list]:
    """A node's inputs, in operand order, and their sizes at the probe (None where unknown)."""
    operands = ctx.inputs(node.id)
    return operands, [sizes(ctx.shape(o)) for o in operands]


def output_feed(ctx):
    """(`output`, the one node feeding it, that node's sizes and the role's wanted sizes at the probe, either
    None where unknown), or None where `output` is missing or not fed exactly once."""
    out = ctx.output_node()
    if out is None or len(ctx.inputs(out.id)) != 1:
        return None
    (last,) = ctx.inputs(out.id)
    return out, last, sizes(ctx.shape(last)), sizes(ctx.output_shape())


def cannot_meet(ctx, diagnostic, merge: Node, operands: Iterable, changed=()) -> bool:
    """Whether a candidate that changes only some operands of `merge` (re-points them or inserts a node before
    them) or the nodes `changed` that only those feed from, cannot get the verifier further: `nadc verify`
    (`ctx.progress_only`) then need not verify it, one verification in three it paid for. `operands`: shapes
    some of the merge's operands have in the candidate (None: not known), those of the operands it keeps (their
    branches as they are) or of a node it inserts (`rule_shape`): any iterable, read only where the block
    leaves that question open (a generator spares a `rule_shape` where it does not).

    Where the block has no `//` (the one way a rule's result depends on constraints found elsewhere) and its
    errors are `diagnostic`, the merge's shape error, and shape errors of other nodes' rules (none fed by a node
    in `changed`), every node upstream of the merge got its shape, and a node whose branch and inputs the
    candidate leaves as they are keeps it, or its error: the kept operands keep their shapes, and each other
    failing node, neither upstream nor downstream of the merge, fails again (and stays live: only the merge's
    branches can die). If the kept operands alone fail the merge's rule (`Add`/`Mul` broadcast, `concat`), the
    merge fails whatever its other operands are, or an error upstream of it blocks it: as many errors or more,
    the same nodes unreached or more, no fewer target warnings than none. The verifier gets no further
    (search.py's `block_progress`)."""
    if not ctx.progress_only or merge.op not in _PART_FAILS or ctx.node_at(diagnostic) is not merge:
        return False
    report = ctx.report
    if report.shapes is None or graph_facts(ctx.block).floordiv or not diagnostic.is_error:
        return False
    reached, failing = report.shapes.shapes, {merge.id}
    for d in report.diagnostics:
        if d.code.code in TARGET_WARNINGS:
            return False
        if d is diagnostic or not d.is_error:
            continue
        node = ctx.node_at(d)  # a shape error of another node's rule: that node ran it, and has no shape
        if node is None or node.id in failing or node.id in reached or not d.code.code.startswith("NAD3") or \
                node.id in ctx.dead() or any(node.id == c or node.id in ctx.descendants(c) for c in changed):
            return False
        failing.add(node.id)
    if merge.id in reached:
        return False
    operands = [shape for shape in operands if shape is not None]
    if len(operands) < 2:
        return False
    return _concat_fails(merge, operands) if merge.op is Op.CONCAT else _broadcast_fails(operands)


def rule_shape(ctx, operation: str, shape) -> Optional[tuple]:
    """The shape a node `operation` (`AvgPool2d(kernel_size=2,stride=2)`) a candidate inserts gets from an input
    of `shape`: shape inference's own step (`ShapeInference.run_node`) in the block's contract (a rule's result
    depends only on the node, its input and the contract, but for `//`); None where not known (the rule fails,
    or `//`)."""
    if shape is None or "//" in operation:
        return None
    read = read_in_block(f"0:{operation}")
    node = read[0][0] if read is not None and len(read[0]) == 1 else None
    if node is None or node.op not in SHAPE_RULES:
        return None
    report = ctx.report
    result = ShapeResult(report.role, contract(report.role, report.stem_stride or 1, report.domain), domain=report.domain)
    found = ShapeInference(ctx.block, result, DiagnosticSink(report.file)).run_node(node, (shape,))
    return tuple(found) if found is not None else None


def removal_gains_nothing(ctx, wires) -> bool:
    """Whether removing the block's `wires` ((edge index, position) pairs, each naming an undefined node or
    repeating an earlier wire), and nothing else, cannot get the verifier further: `nadc verify`
    (`ctx.progress_only`) then need not verify it.

    Structure errors only count there (an error stops a block before shape inference): the wires take their
    NAD202 with them (one per undefined source, one per edge whose target is undefined, whose wires all go),
    and change no error but the NAD207 of a defined target left with fewer inputs (no cycle, no terminal, no
    parameter changes; dead nodes are warnings). Where those that appear make up for those that go, there
    are as many errors or more."""
    if not ctx.progress_only or not graph_facts(ctx.block).unique_ids:
        return False  # an id defined twice: each of its nodes is counted for its inputs
    defined, edges = ctx.block.node_map(), ctx.block.edges
    positions: dict = {}
    for index, position in wires:
        positions.setdefault(index, []).append(position)
    gone, fewer = 0, {}
    for index, removed in positions.items():
        edge = edges[index]
        for position in removed:
            source = defined.get(edge.sources[position])
            if source is None:
                gone += 1
            elif source.op is Op.OUTPUT:
                return False  # an edge out of `output` has an error of its own
        if edge.target not in defined:
            if len(removed) != len(edge.sources):
                return False
            gone += 1
        else:
            fewer[edge.target] = fewer.get(edge.target, 0) + len(removed)
    inputs = graph_facts(ctx.block).inputs
    for target, count in fewer.items():
        node = defined[target]
        if node.opdef is None or node.op in Group.TERMINAL:
            return False
        arity, before = node.opdef.arity, len(inputs.get(target, ()))
        gone += arity.accepts(before - count) - arity.accepts(before)
    return gone <= 0


#: Merges whose rule fails on all operands when it fails on some (`cannot_meet`).
_PART_FAILS = frozenset({Op.ADD, Op.MUL, Op.CONCAT})


#: `_exact` of the sizes asked (a few symbolic sizes, `C`, `2*C`, `H`, recur in every block).
_EXACT: dict = {}


def _exact(size):
    """A size with its rounded divisions taken as exact: two sizes are the same to a shape rule (`alike`) exactly
    when these are equal."""
    found = _EXACT.get(size)
    if found is None:
        if len(_EXACT) > 4096:
            _EXACT.clear()
        found = _EXACT[size] = assume_exact(size)[0]
    return found


def _broadcast_fails(shapes: list) -> bool:
    """Whether broadcasting fails on these shapes and on any shapes added to them: two sizes on one axis (from the
    right) that differ and neither is 1 (nor the same as 1 to `alike`)."""
    for axis in range(1, max(map(len, shapes)) + 1):
        if len({_exact(s[-axis]) for s in shapes if len(s) >= axis} - {ONE}) > 1:
            return True
    return False


def _concat_fails(merge: Node, shapes: list) -> bool:
    """Whether `concat` fails on these shapes and on any added to them: different ranks, or sizes that differ on an
    axis other than the one concatenated."""
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        return True
    dim = constant_int(merge.params["dim"]) if "dim" in merge.params else None
    if dim is None or not -rank <= dim < rank:
        return False
    return any(len({_exact(s[k]) for s in shapes}) > 1 for k in range(rank) if k != dim % rank)
