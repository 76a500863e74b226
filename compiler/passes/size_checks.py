"""Checks of a block's inferred sizes as a whole: can its constraints be met (NAD312), and are its
tensors and layers of a size that can be built (NAD313)?"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping

from nader.dsl.diagnostics import DiagnosticSink
from nader.dsl.expr import TupleValue, Value, constant_int
from nader.dsl.ir import Block, Role
from nader.dsl.ops import Op

from .shape_codes import NETWORK_WIDTHS, SIZE_LIMIT, UNSATISFIABLE
from .shape_types import Shape, ShapeResult
from .structure import graph_facts
from .symbolic import Constraint, Poly


@dataclass(frozen=True)
class Limits:
    """Size limits a block must fit at the reference sizes (per tensor and per layer)."""

    max_elements: int = 1 << 24  # per tensor, one sample, at the reference size
    max_weights: int = 1 << 26  # per layer
    reference: Mapping[str, int] = field(default_factory=lambda: {"B": 1, "C": 64, "dim": 64, "H": 32, "W": 32})


def int_pair(value: Value) -> tuple[int, int]:
    """The (h, w) integers of a kernel size, stride or output size: `k` or `(h,w)`."""
    if isinstance(value, TupleValue):
        items = [constant_int(i) for i in value.items]
        return (items[0], items[-1]) if len(items) in (1, 2) else (items[0], items[1])  # type: ignore[return-value]
    v = constant_int(value)
    return v, v  # type: ignore[return-value]


# Values scanned to decide whether constraints can be met at all.
_SCAN = {"C": range(1, 513), "dim": range(1, 513), "H": range(1, 65), "W": range(1, 65), "B": range(1, 5)}


def check_constraints(block: Block, result: ShapeResult, sink: DiagnosticSink) -> None:
    if not result.constraints:
        return
    key = tuple((c.size, c.modulus) for c in result.constraints)
    satisfiable = _SATISFIABLE.get(key)
    if satisfiable is None:
        if len(_SATISFIABLE) > 65_536:
            _SATISFIABLE.clear()
        satisfiable = _SATISFIABLE[key] = _satisfiable(result.constraints)
    if satisfiable:
        _check_network_widths(block, result, sink, key)
        return
    sink.emit(UNSATISFIABLE, "no width satisfies the constraints " + "; ".join(str(c) for c in result.constraints),
              block.header_span, "relax one of them, e.g. choose `groups` that divides the channel count", block.name)
    result.failed = True


#: (C, dim, H) of each stage NAS-Bench-201's network (NADER's search network) builds a block of each
#: role at: the widths a block must run at there, whatever widths fitting would choose here.
NETWORK_SIZES = {
    Role.BASE: ((16, 16, 32), (32, 32, 16), (64, 64, 8)),
    Role.CELL: ((16, 16, 32), (32, 32, 16), (64, 64, 8)),
    Role.DOWNSAMPLE: ((16, 32, 32), (32, 64, 16)),
    Role.REDUCTION_CELL: ((16, 16, 32), (32, 32, 16)),
    Role.STEM: ((3, 16, 32),),
}


def network_sizes(role: Role, domain) -> list[dict[str, int]]:
    """The symbol values of NETWORK_SIZES for `role` (a fixed resolution replaces the stages' own)."""
    side = domain.size if domain.name == "fixed" else None
    return [{"B": 2, "C": c, "dim": dim, "H": side or h, "W": side or h} for c, dim, h in NETWORK_SIZES.get(role, ())]


# The first of `network_sizes` a set of constraints fails at, by the constraints' sizes and moduli, role
# and domain (-1: none): the same constraints recur across blocks.
_NETWORK_FAILS: dict[tuple, int] = {}


def _check_network_widths(block: Block, result: ShapeResult, sink: DiagnosticSink, key: tuple) -> None:
    """NAD318 where a valid block's constraints fail at a width NAS-Bench-201's network gives its role."""
    memo = (key, result.role, result.domain)
    first = _NETWORK_FAILS.get(memo)
    all_sizes = network_sizes(result.role, result.domain) if first != -1 else ()
    if first is None:
        if len(_NETWORK_FAILS) > 65_536:
            _NETWORK_FAILS.clear()
        first = _NETWORK_FAILS[memo] = next((k for k, sizes in enumerate(all_sizes) if not result.satisfied(sizes)), -1)
    if first >= 0:
        sizes = all_sizes[first]
        failed = [c for c in result.constraints if not c.holds(sizes)]
        if failed:
            at = "C = 3 -> dim = 16" if result.role is Role.STEM else \
                f"C = {sizes['C']}" + (f" -> dim = {sizes['dim']}" if sizes["dim"] != sizes["C"] else "")
            sink.emit(NETWORK_WIDTHS, f"the constraint{'s' if len(failed) > 1 else ''} "
                      f"{'; '.join(str(c) for c in failed)} fail{'s' if len(failed) == 1 else ''} at {at}, a width "
                      f"NAS-Bench-201's network (NADER's) builds this {result.role.value} block at",
                      block.header_span, "divide by what 16 is a multiple of (`C/16`, not `C/32`) and use `groups` "
                      "that divide the channels there", block.name)


# Whether some sizes meet a set of constraints, by their sizes and moduli (what `holds` reads).
_SATISFIABLE: dict[tuple, bool] = {}


def _satisfiable(constraints: list[Constraint]) -> bool:
    """True where some scanned sizes meet every constraint, or where there are too many to scan."""
    symbols = sorted(set().union(*(c.size.free_symbols() for c in constraints)))
    ranges = [_SCAN.get(s, range(1, 33)) for s in symbols]
    budget = 200_000
    for values in itertools.product(*ranges):
        budget -= 1
        if budget < 0:
            return True  # too many combinations to scan: keep the constraints, do not guess
        sizes = dict(zip(symbols, values))
        if all(c.holds(sizes) for c in constraints):
            return True
    return False


# Values at a reference, by reference: {shape: element count} and {size: value}. The same sizes
# and shapes recur across blocks; one table per reference keeps the lookups to the shape or size.
_AT_REFERENCE: dict[tuple, tuple[dict, dict]] = {}


def _reference_tables(key: tuple) -> tuple[dict, dict]:
    tables = _AT_REFERENCE.get(key)
    if tables is None or len(tables[0]) + len(tables[1]) > 200_000:
        tables = _AT_REFERENCE[key] = ({}, {})
    return tables


def _at_reference(size: Poly, sizes: Mapping[str, int], values: dict) -> int:
    value = values.get(size)
    if value is None:
        value = values[size] = int(size.evaluate(sizes))
    return value


def _count_at_reference(shape: Shape, sizes: Mapping[str, int], values: dict) -> int:
    count = 1
    for s in shape:
        count *= max(_at_reference(s, sizes, values), 0)
    return count


# The axis of a layer's input and output whose sizes its weights span (with the kernel's area).
_WEIGHT_AXIS = {Op.CONV2D: 1, Op.LINEAR: -1}


# The reference sizes of a contract under some limits, by the identities of both (kept alive in the entry).
_REFERENCES: dict[tuple, tuple] = {}


def _reference_sizes(result: ShapeResult, limits: Limits) -> tuple[dict[str, int], tuple]:
    """The sizes, and them as a table key."""
    key = (id(result.contract), id(limits))
    hit = _REFERENCES.get(key)
    if hit is None or hit[0] is not result.contract or hit[1] is not limits:
        sizes = dict(limits.reference)
        if result.role is Role.STEM:
            sizes["C"] = 3
        else:
            sizes["dim"] = int(result.contract.env["dim"].evaluate(sizes))
        if len(_REFERENCES) > 1024:
            _REFERENCES.clear()
        hit = _REFERENCES[key] = (result.contract, limits, sizes, tuple(sorted(sizes.items())))
    return hit[2], hit[3]


def check_limits(block: Block, result: ShapeResult, sink: DiagnosticSink, limits: Limits) -> None:
    sizes, key = _reference_sizes(result, limits)
    counts, values = _reference_tables(key)
    if not _within_limits(block, result, sizes, counts, values, limits):
        _report_limits(block, result, sink, limits, sizes, counts, values)


def _within_limits(block: Block, result: ShapeResult, sizes: Mapping[str, int], counts: dict, values: dict,
                   limits: Limits) -> bool:
    """Whether every tensor and layer is within the limits (most blocks): no walk node by node.

    False also where a size cannot be evaluated; `_report_limits` then decides as it walks.
    """
    shapes = result.shapes
    known = list(map(counts.get, shapes.values()))
    if None in known:
        return False  # a shape not counted yet: the walk counts it
    if max(known, default=0) > limits.max_elements:
        return False
    facts = graph_facts(block)
    nodes, sources = facts.nodes, facts.inputs
    value_of = values.get
    for node_id in facts.layers:
        shape = shapes.get(node_id)
        if shape is None:
            continue  # a dead node
        node = nodes[node_id]
        axis = _WEIGHT_AXIS[node.op]
        inputs = sources.get(node_id)
        if not inputs:
            continue
        fan_in, out = value_of(shapes[inputs[0]][axis]), value_of(shape[axis])
        if fan_in is None or out is None:
            return False  # a size not evaluated yet: the walk evaluates it
        kh, kw = _kernel(node.params["kernel_size"]) if axis == 1 else (1, 1)
        if fan_in * out * kh * kw > limits.max_weights:
            return False
    return True


# Kernel sizes by the identity of the value, which equal node lines share (kept alive in the entry).
_KERNELS: dict[int, tuple] = {}


def _kernel(value: Value) -> tuple[int, int]:
    hit = _KERNELS.get(id(value))
    if hit is None or hit[0] is not value:
        if len(_KERNELS) > 4096:
            _KERNELS.clear()
        hit = _KERNELS[id(value)] = (value, int_pair(value))
    return hit[1]


def _report_limits(block: Block, result: ShapeResult, sink: DiagnosticSink, limits: Limits,
                   sizes: Mapping[str, int], counts: dict, values: dict) -> None:
    """Walks the nodes in order and reports the first tensor or layer past the limits."""
    nodes = block.node_map()
    sources = block.input_map()
    shapes = result.shapes
    max_elements = limits.max_elements
    for node_id, shape in shapes.items():
        count = counts.get(shape)  # looked up here: most shapes were counted before (a hot loop)
        if count is None:
            try:
                count = counts[shape] = _count_at_reference(shape, sizes, values)
            except (KeyError, ZeroDivisionError):
                continue
        if count > max_elements:
            node = nodes[node_id]
            sink.emit(SIZE_LIMIT, f"node {node_id} (`{node.op_name}`) produces {count:,} elements per sample at "
                                  f"C={sizes['C']}, H=W={sizes['H']}, past the limit of {limits.max_elements:,}",
                      node.span, "use smaller channel multipliers or repeat counts", block.name)
            result.failed = True
            return
        node = nodes[node_id]
        if node.op is Op.CONV2D or node.op is Op.LINEAR:
            inputs = sources.get(node_id)
            if not inputs:
                continue
            x = shapes[inputs[0]]
            try:
                fan_in = _at_reference(x[1 if node.op is Op.CONV2D else -1], sizes, values)
                out = _at_reference(shape[1 if node.op is Op.CONV2D else -1], sizes, values)
            except (KeyError, ZeroDivisionError):
                continue
            kh, kw = int_pair(node.params["kernel_size"]) if node.op is Op.CONV2D else (1, 1)
            weights = fan_in * out * kh * kw
            if weights > limits.max_weights:
                sink.emit(SIZE_LIMIT, f"node {node_id} (`{node.op_name}`) has {weights:,} weights at C={sizes['C']}, "
                                      f"past the limit of {limits.max_weights:,}",
                          node.span, "use smaller channel multipliers", block.name)
                result.failed = True
                return
