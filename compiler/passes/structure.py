"""Structure checks (NAD2xx): ids, edges, terminals, cycles, reachability, arity, parameters.

Each check is a small function over a block that emits diagnostics; `check_structure`
runs them in order, and none of them when one set of facts about the block (gathered
in one walk) shows it clean. Shape inference runs only on blocks these accept. The
codes live in `structure_codes.py`.
"""
from __future__ import annotations

from functools import lru_cache
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Mapping, Optional

from nader.dsl.diagnostics import UNSAFE, DiagnosticSink, Fix, Label
from nader.dsl.expr import SPATIAL_SYMBOLS, BinOp, Neg, Num, TupleValue, Value, constant_int, constant_number, leaves, symbols_in
from nader.dsl.ir import Block, NodeId, Role, free_id
from nader.dsl.ops import Group, Op, ParamKind
from nader.dsl.span import Span

from .structure_codes import (DUPLICATE_ID, UNDEFINED_NODE, CYCLE, BAD_TERMINALS, TERMINAL_EDGES, DEAD_NODE, WRONG_ARITY,
                              MISSING_PARAMETER, ILL_TYPED_PARAMETER, SPATIAL_IN_LAYER, DUPLICATE_BLOCK)

StructureCheck = Callable[[Block, Role, DiagnosticSink], None]


@dataclass(slots=True)
class GraphFacts:
    """What the passes need about a block, computed in one walk over its nodes.

    The checks test these first and walk the block again only to report: most blocks are clean.
    """

    nodes: dict  # id -> Node (first definition)
    inputs: Mapping  # target id -> source ids in edge order: every wire, to and from undefined ids too
    feeding: set  # ids that are the source of some wire
    sources: list  # ids of input terminals (first definitions)
    sinks: list  # ids of output terminals
    unique_ids: bool  # no id is defined twice
    defined_ends: bool  # every wire joins defined nodes
    arities_fit: bool  # every known operation has a number of inputs it accepts
    misfits: list  # ids of the nodes whose number of inputs their operation does not accept (none: arities_fit)
    parameters_fit: bool  # no node line has a parameter problem
    layers: list  # ids of nodes with weights (`Conv2d`, `Linear`): shape inference bounds their size
    floordiv: bool  # some argument uses `//`, whose simplification depends on constraints found elsewhere


def _compute_facts(block: Block) -> GraphFacts:
    nodes = block.node_map()
    inputs = block.input_map()
    feeding = set(chain.from_iterable(inputs.values()))
    sources, sinks = [], []
    parameters_fit = True
    layers, misfits, floordiv = [], [], False
    known = _LINES.get
    for n in block.nodes:
        hit = known((n.op_name, id(n.args)))  # looked up here, not in a call per node: a hot loop
        if hit is None or hit[0] is not n.args:
            if n.opdef is None:
                floordiv = floordiv or _uses_floordiv(n.args)
                continue
            hit = _line_facts(n)
        _, problems, uses_floordiv, kind, least, most = hit
        parameters_fit = parameters_fit and not problems
        floordiv = floordiv or uses_floordiv
        i = n.id
        if kind is _SOURCE:
            if nodes[i] is n:
                sources.append(i)
        elif kind is _SINK:
            if nodes[i] is n:
                sinks.append(i)
        else:
            count = len(inputs.get(i, ()))
            if count < least or (most is not None and count > most):
                misfits.append(i)
            if kind is _LAYER and nodes[i] is n:
                layers.append(i)
    defined = nodes.keys()
    return GraphFacts(nodes, inputs, feeding, sources, sinks, len(nodes) == len(block.nodes),
                      inputs.keys() <= defined and feeding <= defined, not misfits, misfits, parameters_fit, layers,
                      floordiv)


_LAYERS = Group.WEIGHT_LAYER


def graph_facts(block: Block) -> GraphFacts:
    return block.analysis("graph_facts", _compute_facts)


def check_ids(block: Block, role: Role, sink: DiagnosticSink) -> None:
    facts = graph_facts(block)
    if facts.unique_ids and facts.defined_ends:
        return
    seen: Mapping = facts.nodes  # each id once: the edges' ends are looked up in it
    if not facts.unique_ids:
        seen = {}
        fresh = _free_id(block)
        for node in block.nodes:
            if node.id in seen and sink.wants(DUPLICATE_ID):
                where = Span.on_line(node.span.line, node.id_span)
                sink.emit(DUPLICATE_ID, f"node id {node.id} is defined twice", where,
                          f"give this node an unused id, e.g. `{fresh}`", block.name,
                          (Label(seen[node.id], "first defined here"),),
                          Fix.replace(where, str(fresh), kind="fresh-id",
                                      message=f"rename the second node {node.id} to {fresh}"))
                fresh += 1
            elif node.id not in seen:
                seen[node.id] = node.span
    for edge in block.edges if not facts.defined_ends else ():
        for index, source in enumerate(edge.sources):
            if source not in seen and sink.wants(UNDEFINED_NODE):
                sink.emit(UNDEFINED_NODE, f"edge source {source} is not a defined node", edge.source_span(index),
                          f"define node {source} or correct the id", block.name)
        if edge.target not in seen and sink.wants(UNDEFINED_NODE):
            sink.emit(UNDEFINED_NODE, f"edge target {edge.target} is not a defined node",
                      Span.on_line(edge.span.line, edge.target_span), f"define node {edge.target} or correct the id", block.name)


def check_terminals(block: Block, role: Role, sink: DiagnosticSink) -> None:
    wanted = [Op.INPUT1, Op.INPUT2] if role in (Role.CELL, Role.REDUCTION_CELL) else [Op.INPUT]
    facts = graph_facts(block)
    if facts.unique_ids and len(facts.sinks) == 1 and len(facts.sources) == len(wanted) and \
            {facts.nodes[i].op for i in facts.sources} == set(wanted):
        return
    source_ops = Group.SOURCE
    sources = [n for n in block.nodes if n.op in source_ops]
    sinks = [n for n in block.nodes if n.op is Op.OUTPUT]
    for n in sources:
        if n.op not in wanted and sink.wants(BAD_TERMINALS):
            sink.emit(BAD_TERMINALS, f"`{n.op_name}` is not an input of a {role} block",
                      Span.on_line(n.span.line, n.op_span), f"a {role} block's inputs are {', '.join(f'`{w}`' for w in wanted)}",
                      block.name)
    for op in wanted:
        found = [n for n in sources if n.op is op]
        if not found and sink.wants(BAD_TERMINALS):
            line = f"{_free_id(block)}:{op}"
            sink.emit(BAD_TERMINALS, f"the block has no `{op}` node", block.header_span,
                      f"add a node `{line}` and connect it", block.name, fix=_add_line(block, line, f"add the node `{line}`"))
        for extra in found[1:]:
            if sink.wants(BAD_TERMINALS):
                sink.emit(BAD_TERMINALS, f"`{op}` is defined more than once", extra.span,
                          "keep one and send its edges to every consumer", block.name,
                          (Label(found[0].span, "first here"),))
    if not sinks and sink.wants(BAD_TERMINALS):
        line = f"{_free_id(block)}:output"
        sink.emit(BAD_TERMINALS, "the block has no `output` node", block.header_span,
                  f"add a node `{line}` and an edge into it", block.name, fix=_add_line(block, line, f"add the node `{line}`"))
    for extra in sinks[1:]:
        if sink.wants(BAD_TERMINALS):
            sink.emit(BAD_TERMINALS, "`output` is defined more than once", extra.span,
                      "merge the results with `Add` or `concat` and send that to one output", block.name,
                      (Label(sinks[0].span, "first here"),))


def _free_id(block: Block) -> int:
    return free_id(n.id for n in block.nodes)


def _add_line(block: Block, text: str, message: str) -> Fix:
    """Inserts a node line above the block's first node or edge line (below the header if it has none).

    Unsafe: a terminal added changes the graph (it still needs its edges)."""
    lines = [item.span.line for item in (*block.nodes, *block.edges)]
    at = min(lines) if lines else block.header_span.line + 1
    return Fix.replace(Span(at, 1, at, 1), text + "\n", kind="add-terminal", safety=UNSAFE, message=message)


def check_terminal_edges(block: Block, role: Role, sink: DiagnosticSink) -> None:
    facts = graph_facts(block)
    nodes, inputs = facts.nodes, facts.inputs
    bad_sources = [i for i in facts.sources if i in inputs]
    bad_sinks = [i for i in facts.sinks if i in facts.feeding]  # edges to undefined ids too
    if bad_sources or bad_sinks:
        for source, target, edge, index in block.wires():
            if target in bad_sources and sink.wants(TERMINAL_EDGES):
                sink.emit(TERMINAL_EDGES, f"edge into input terminal `{nodes[target].op_name}` (node {target})", edge.span,
                          "inputs take no edges; reverse the edge or target another node", block.name)
            if source in bad_sinks and sink.wants(TERMINAL_EDGES):
                sink.emit(TERMINAL_EDGES, f"edge out of `output` (node {source})", edge.span,
                          "`output` ends the block; take the value from the node that feeds it", block.name)
    for i in facts.sinks:
        count = len(inputs.get(i, ()))
        if count != 1 and sink.wants(TERMINAL_EDGES):
            sink.emit(TERMINAL_EDGES, f"`output` has {count} incoming edges; it needs exactly one", nodes[i].span,
                      "merge the results with `Add` or `concat` first" if count > 1 else "add an edge from the last node to output",
                      block.name)


def check_cycles(block: Block, role: Role, sink: DiagnosticSink) -> None:
    if block.topological_order() is not None:
        return
    nodes = block.node_map()
    successors = _successors(block)
    color: dict[int, int] = {}
    for start in nodes:
        if color.get(start):
            continue
        stack = [(start, iter(successors[start]))]
        path = [start]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                path.pop()
            elif color.get(nxt) == 1:
                if sink.wants(CYCLE):
                    cycle = path[path.index(nxt):] + [nxt]
                    edge = next(e for s, t, e, _ in block.wires() if s == node and t == nxt)
                    sink.emit(CYCLE, f"cycle {' -> '.join(map(str, cycle))}", edge.span,
                              f"remove or redirect the edge {node}->{nxt}", block.name)
                return
            elif not color.get(nxt):
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(successors[nxt])))


def _successors(block: Block) -> dict:
    """Consumer ids among defined nodes, per defined node."""
    nodes, consumers = block.node_map(), block.consumer_map()
    return {i: [t for t in consumers.get(i, ()) if t in nodes] for i in nodes}


def check_arity(block: Block, role: Role, sink: DiagnosticSink) -> None:
    facts = graph_facts(block)
    if facts.arities_fit:
        return
    inputs = facts.inputs
    terminals = Group.TERMINAL
    for n in block.nodes:
        d = n.opdef
        if d is None or n.op in terminals:
            continue
        count = len(inputs.get(n.id, ()))
        arity = d.arity
        if (count < arity.min or (arity.max is not None and count > arity.max)) and sink.wants(WRONG_ARITY):
            if count > (d.arity.max or count):
                fix = "merge the inputs with `Add`, `Mul` or `concat` first and feed that node here"
            else:
                fix = f"add {'an edge' if count + 1 >= d.arity.min else 'edges'} into node {n.id}"
            sink.emit(WRONG_ARITY, f"`{n.op_name}` takes {d.arity.describe()} but node {n.id} has {count}", n.span, fix, block.name)


def dead_nodes(block: Block) -> tuple:
    """Ids of the nodes whose result never reaches `output`, in file order (none without an output)."""
    return block.analysis("dead_nodes", _dead_nodes)


def _dead_nodes(block: Block) -> tuple:
    facts = graph_facts(block)
    if not facts.sinks:
        return ()
    nodes, inputs = facts.nodes, facts.inputs
    # Acyclic, and every node but the outputs feeds a defined node: following consumers from any
    # node ends at an output, so nothing is dead (most blocks; no walk needed).
    if facts.defined_ends and nodes.keys() - facts.feeding == set(facts.sinks) and \
            block.topological_order() is not None:
        return ()
    alive, todo = set(facts.sinks), list(facts.sinks)
    while todo:
        for source in inputs.get(todo.pop(), ()):
            if source not in alive and source in nodes:
                alive.add(source)
                todo.append(source)
    return tuple(i for i in nodes if i not in alive)


def dead_node_warnings(block: Block, words: bool = True) -> list[Optional[tuple[Span, str, str, tuple[Label, ...]]]]:
    """(span, message, help, labels) of NAD206 for a block: one for its dead nodes, one per ignored input
    (without `words`, None for each: a `CountingSink` needs how many).

    Nodes no input reaches are not reported here: they lie on a cycle, or miss an edge or a
    node, which NAD202, NAD203 and NAD207 report.
    """
    nodes = graph_facts(block).nodes
    dead = dead_nodes(block)
    inputs = [i for i in dead if nodes[i].op in Group.SOURCE]
    computed = [i for i in dead if nodes[i].op not in Group.SOURCE]
    out: list = []
    for i in inputs:
        out.append((nodes[i].span, f"input `{nodes[i].op_name}` (node {i}) never reaches `output`: the block ignores it",
                    f"use node {i} on the way to output, or accept that the block does not depend on it", ()) if words
                   else None)
    if computed and not words:
        out.append(None)
    elif computed:
        first = nodes[computed[0]]
        listed = ", ".join(f"{i} (`{nodes[i].op_name}`)" for i in computed)
        noun = "node" if len(computed) == 1 else "nodes"
        verb = "never reaches" if len(computed) == 1 else "never reach"
        labels = tuple(Label(nodes[i].span, f"node {i} is dropped too") for i in computed[1:])
        out.append((first.span, f"{noun} {listed} {verb} `output`; compiling drops {'it' if len(computed) == 1 else 'them'}",
                    "connect the result to a consumer on the way to output, or delete the dead nodes", labels))
    return out


def check_reachability(block: Block, role: Role, sink: DiagnosticSink) -> None:
    if not dead_nodes(block):
        return
    for warning in dead_node_warnings(block, not sink.counting):
        if sink.wants(DEAD_NODE):
            span, message, help_text, labels = warning
            sink.emit(DEAD_NODE, message, span, help_text, block.name, labels)


@lru_cache(maxsize=4096)
def _param_kind_error(kind: ParamKind, value: Value, text: str) -> Optional[str]:
    """What `value` (written `text`) should be for a parameter of `kind`, or None when it fits.

    `text` is part of the cache key: `Num(3.0) == Num(3)`, and only one of them is an integer."""
    if kind is ParamKind.SPATIAL:
        items = value.items if isinstance(value, TupleValue) else (value,)
        if len(items) not in (1, 2) or any((c := constant_int(i)) is None or c < 1 for i in items):
            return "a positive integer or a pair `(h,w)` of positive integers"
        return None
    if kind is ParamKind.AXIS:
        return None if constant_int(value) is not None else "an integer axis"
    if kind is ParamKind.AXES:
        items = value.items if isinstance(value, TupleValue) else (value,)
        return None if items and all(constant_int(i) is not None for i in items) else "an integer axis or a tuple of axes"
    if kind is ParamKind.PROBABILITY:
        p = constant_number(value)
        return None if p is not None and 0 <= p < 1 else "a number in [0, 1)"
    if kind is ParamKind.FLAG:
        return None if constant_int(value) in (0, 1) else "0 or 1"
    # SIZE and SHAPE: integer expressions.
    if isinstance(value, TupleValue):
        return "a size expression, not a tuple"
    if any(isinstance(n, Num) and isinstance(n.value, float) for n in leaves(value)):
        return "an integer expression (no decimals)"
    return None


# What a node line's operation and arguments imply, per line: (args, parameter problems, uses `//`,
# the operation's kind for `_compute_facts`, its least and most inputs), so the walk over a block's
# nodes reads one record per node. Keyed by the operation and the identity of the interned argument
# tuple that parse_line shares between equal lines; the entry keeps that tuple alive so its id
# cannot be reused.
_LINES: dict[tuple, tuple] = {}
_SOURCE, _SINK, _LAYER, _OTHER = "source", "sink", "layer", "other"


def _line_facts(n) -> tuple:
    hit = _LINES.get((n.op_name, id(n.args)))
    if hit is None or hit[0] is not n.args:
        if len(_LINES) > 65_536:
            _LINES.clear()
        op, arity = n.op, n.opdef.arity
        kind = _SOURCE if op in Group.SOURCE else _SINK if op in Group.SINK else _LAYER if op in _LAYERS else _OTHER
        hit = _LINES[n.op_name, id(n.args)] = (n.args, _find_parameter_problems(n), _uses_floordiv(n.args),
                                                kind, arity.min, arity.max)
    return hit


def _uses_floordiv(args) -> bool:
    return any(_has_floordiv(a.value) for a in args)


def _has_floordiv(value) -> bool:
    if isinstance(value, BinOp):
        return value.op == "//" or _has_floordiv(value.lhs) or _has_floordiv(value.rhs)
    if isinstance(value, Neg):
        return _has_floordiv(value.operand)
    if isinstance(value, TupleValue):
        return any(_has_floordiv(v) for v in value.items)
    return False


def _parameter_problems(n) -> tuple:
    """Problems (code, message, parameter to point at or None for the op/node, help) of a node line."""
    return _line_facts(n)[1]


def _find_parameter_problems(n) -> tuple:
    d = n.opdef
    problems = []
    params = n.params
    for p in d.params:
        value = params.get(p.name)
        if value is None:
            if p.required:
                problems.append((MISSING_PARAMETER, f"`{n.op_name}` needs `{p.name}`", "", f"add it: `{d.signature()}`"))
            continue
        problems += _value_problems(n.op_name, d, p, value)
    return tuple(problems)


# The problems of one parameter's value, per operation, parameter and value object: values repeat
# across distinct lines (a default is one object for all nodes; an argument is shared by the lines
# that write it at the same column). Each entry keeps its parameter and value alive, so their ids
# stay unique.
_VALUES: dict[tuple, tuple] = {}


def _value_problems(op_name: str, d, p, value) -> tuple:
    key = (op_name, id(p), id(value))
    hit = _VALUES.get(key)
    if hit is None or hit[0] is not value or hit[1] is not p:
        if len(_VALUES) > 65_536:
            _VALUES.clear()
        hit = _VALUES[key] = (value, p, _check_value(op_name, d, p, value))
    return hit[2]


def _check_value(op_name: str, d, p, value) -> tuple:
    problems = []
    if p.variadic:
        items = value.items if isinstance(value, TupleValue) else (value,)
        if not items:
            problems.append((MISSING_PARAMETER, f"`{op_name}` needs at least one value", None,
                             f"write e.g. `{d.signature()}`"))
    else:
        items = (value,)
    for item in items:
        wanted = _param_kind_error(p.kind, item, str(item))
        if wanted:
            problems.append((ILL_TYPED_PARAMETER, f"`{p.name}` of `{op_name}` must be {wanted}, not `{item}`",
                             p.name, None))
    if p.kind is ParamKind.SIZE:
        bad = sorted({s.name for s in symbols_in(value) if s.name in SPATIAL_SYMBOLS or s.name == "B"})
        if bad:
            problems.append((SPATIAL_IN_LAYER, f"`{p.name}` of `{op_name}` uses {', '.join(f'`{b}`' for b in bad)}",
                             p.name, "layer parameters may use only `C` and `dim`"))
    return tuple(problems)


def check_parameters(block: Block, role: Role, sink: DiagnosticSink) -> None:
    if graph_facts(block).parameters_fit:
        return
    for n in block.nodes:
        if n.opdef is None:
            continue
        for code, message, where, help_text in _parameter_problems(n):
            if not sink.wants(code):
                continue
            if where == "":
                span = Span.on_line(n.span.line, n.op_span)
            elif where is None:
                span = n.span
            else:
                span = n.arg_span(where)
            sink.emit(code, message, span, help_text, block.name)


STRUCTURE_CHECKS: tuple[StructureCheck, ...] = (
    check_ids, check_terminals, check_terminal_edges, check_cycles, check_arity, check_reachability, check_parameters,
)


def check_structure(block: Block, role: Role, sink: DiagnosticSink) -> None:
    if _is_clean(block, role):
        return
    for check in STRUCTURE_CHECKS:
        check(block, role, sink)


_INPUTS_OF_ROLE = {role: frozenset({Op.INPUT1, Op.INPUT2} if role in (Role.CELL, Role.REDUCTION_CELL) else {Op.INPUT})
                   for role in Role}


def _is_clean(block: Block, role: Role) -> bool:
    """Whether no check would report anything (most blocks): the checks' early returns, all at once."""
    facts = graph_facts(block)
    if not (facts.unique_ids and facts.defined_ends and facts.arities_fit and facts.parameters_fit
            and len(facts.sinks) == 1):
        return False
    inputs, (output,) = facts.inputs, facts.sinks
    if output in facts.feeding or len(inputs.get(output, ())) != 1 or any(i in inputs for i in facts.sources):
        return False
    wanted = _INPUTS_OF_ROLE[role]
    if len(facts.sources) != len(wanted) or {facts.nodes[i].op for i in facts.sources} != wanted:
        return False
    return block.topological_order() is not None and not dead_nodes(block)
