"""The typed IR of the block language: program, block, node, edge, argument.

Every object carries its source span; spans (and the spelling things had in
the source) do not take part in equality, so `parse(fmt(x)) == x` compares
meaning, comments included. `str(block)` is a readable canonical dump with
bound parameters (defaults filled in), in topological order where one exists.
"""
from __future__ import annotations

import enum
from collections import defaultdict
from dataclasses import dataclass, field
from heapq import heappop, heappush
from operator import attrgetter
from typing import Iterator, Mapping, Optional, Union

from .expr import Num, TupleValue, Value
from .ops import REQUIRED, SPELLINGS, Group, Op, OpDef
from .span import NO_COLS, NO_SPAN, ColSpan, Span


#: A node id: an integer (`2`) or a name of letters, digits and `_` (`2a`, `conv_1`), as NADER's
#: agents write them. Integers are kept as `int` (so `007` is 7); terminals are known by their
#: operation, never by their id.
NodeId = Union[int, str]

_new_object = object.__new__


def node_id(text: str) -> NodeId:
    """The id a node-id token spells: an int when it is all digits, else the name."""
    return int(text) if text.isdigit() else str(text)


def id_sort_key(i: NodeId) -> tuple:
    """Orders ids: integers by value first, then names alphabetically."""
    return (0, i, "") if isinstance(i, int) else (1, 0, i)


def id_token(i: NodeId) -> str:
    """The id as the tail of a generated identifier (`x2`, `x_conv_1`, layer `n_2a`): distinct ids
    give distinct tokens, since only names get the `_`."""
    return str(i) if isinstance(i, int) else f"_{i}"


def free_id(ids) -> int:
    """The smallest integer id above every integer id in `ids` (0 when there is none)."""
    return max((i for i in ids if isinstance(i, int)), default=-1) + 1


class Role(str, enum.Enum):
    BASE = "base"  # (B,C,H,W) -> (B,C,H,W)
    STEM = "stem"  # (B,3,H,W) -> (B,dim,H/s,W/s)
    DOWNSAMPLE = "downsample"  # (B,C,H,W) -> (B,dim,H/2,W/2)
    CELL = "cell"  # input1, input2 -> (B,dim,H,W)
    REDUCTION_CELL = "reduction_cell"  # input1, input2 -> (B,dim,H/2,W/2)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument as written: `name=value` or a positional `value`."""

    name: Optional[str]
    value: Value
    span: ColSpan = field(default=NO_COLS, compare=False, repr=False)
    name_span: ColSpan = field(default=NO_COLS, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.name}={self.value}" if self.name else str(self.value)


@dataclass(slots=True, eq=True)
class Node:
    """A node line: `ID:OP(args)`, with its comments and source positions."""

    id: NodeId
    op_name: str  # canonical name when the operation is known, else as written
    args: tuple[Arg, ...] = ()
    comment: Optional[str] = None
    leading_comments: tuple[str, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    id_span: ColSpan = field(default=NO_COLS, compare=False, repr=False)
    op_span: ColSpan = field(default=NO_COLS, compare=False, repr=False)
    # Bound parameters with defaults filled in (derived from op_name and args).
    params: Mapping[str, Value] = field(default_factory=dict, compare=False, repr=False)
    # Resolved from op_name once; `dataclasses.replace` re-runs __post_init__.
    opdef: Optional[OpDef] = field(default=None, init=False, compare=False, repr=False)
    op: Optional[Op] = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        d = self.opdef = SPELLINGS.get(self.op_name)  # `lookup` without the call: a Node per node line
        self.op = d.op if d is not None else None

    @classmethod
    def _parsed(cls, id: NodeId, op_name: str, args: tuple[Arg, ...], comment: Optional[str],
                leading_comments: tuple[str, ...], span: Span, id_span: ColSpan, op_span: ColSpan,
                params: Mapping[str, Value], opdef: Optional[OpDef]) -> "Node":
        """The node the constructor builds, `opdef` being `SPELLINGS.get(op_name)` (the parser
        resolves it once per distinct line). The slots are filled directly: a Node per node line."""
        self = _new_object(cls)
        self.id = id
        self.op_name = op_name
        self.args = args
        self.comment = comment
        self.leading_comments = leading_comments
        self.span = span
        self.id_span = id_span
        self.op_span = op_span
        self.params = params
        self.opdef = opdef
        self.op = opdef.op if opdef is not None else None
        return self

    def arg(self, name: str) -> Optional[Arg]:
        """The argument that sets parameter `name`, if written (positional ones included)."""
        d = self.opdef
        if d is None:
            return None
        positional = [a for a in self.args if a.name is None]
        for a in self.args:
            if a.name == name:
                return a
        for index, param in enumerate(d.params):
            if param.name == name and index < len(positional) and not param.variadic:
                return positional[index]
        return None

    def arg_span(self, name: str) -> Span:
        """Where parameter `name` is written, or the operation name if it is not."""
        a = self.arg(name)
        return Span.on_line(self.span.line, a.span if a else self.op_span)

    def source_text(self) -> str:
        if not self.args:
            return f"{self.id}:{self.op_name}"
        return f"{self.id}:{self.op_name}({','.join(str(a) for a in self.args)})"


@dataclass(slots=True, eq=True)
class Edge:
    """One edge line: `a->b` or `a,b,c->d` (several sources, in order)."""

    sources: tuple[NodeId, ...]
    target: NodeId
    comment: Optional[str] = None
    leading_comments: tuple[str, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    source_spans: tuple[ColSpan, ...] = field(default=(), compare=False, repr=False)
    target_span: ColSpan = field(default=NO_COLS, compare=False, repr=False)

    def source_text(self) -> str:
        return f"{','.join(map(str, self.sources))}->{self.target}"

    def source_span(self, index: int) -> Span:
        return Span.on_line(self.span.line, self.source_spans[index])


@dataclass(slots=True, eq=True)
class Block:
    """A `##Name##` block: its nodes and edges in file order, comments and positions."""

    name: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    leading_comments: tuple[str, ...] = ()
    header_comment: Optional[str] = None
    trailing_comments: tuple[str, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    header_span: Span = field(default=NO_SPAN, compare=False, repr=False)
    _adjacency: Optional[dict] = field(default=None, init=False, compare=False, repr=False)  # `_inputs`
    _analyses: Optional[dict] = field(default=None, init=False, compare=False, repr=False)

    def analysis(self, key: str, compute):
        """A derived fact about this block, computed once (blocks are not mutated after parsing)."""
        cache = self._analyses
        if cache is None:
            cache = self._analyses = {}
        if key not in cache:
            cache[key] = compute(self)
        return cache[key]

    # -- graph view -------------------------------------------------------
    def _inputs(self) -> dict[NodeId, list[NodeId]]:
        """Source ids by target, in edge order; computed once (blocks are not mutated)."""
        inputs = self._adjacency
        if inputs is None:
            inputs = self._adjacency = {}  # a plain dict: a lookup never adds a key
            for e in self.edges:
                target = e.target
                if target in inputs:
                    inputs[target] += e.sources
                else:
                    inputs[target] = [*e.sources]
        return inputs

    def _consumers(self) -> dict[NodeId, list[NodeId]]:
        collected: defaultdict = defaultdict(list)
        for e in self.edges:
            t = e.target
            for s in e.sources:
                collected[s].append(t)
        return dict(collected)

    def node(self, node_id: NodeId) -> Optional[Node]:
        for n in self.nodes:
            if n.id == node_id:
                return n
        return None

    def node_map(self) -> dict[NodeId, Node]:
        """Nodes by id (the first definition wins where an id is duplicated). Shared: do not mutate."""
        return self.analysis("node_map", Block._node_map)

    def _node_map(self) -> dict[NodeId, Node]:
        result: dict[NodeId, Node] = {}
        for n in self.nodes:
            result.setdefault(n.id, n)
        return result

    def wires(self) -> Iterator[tuple[NodeId, NodeId, Edge, int]]:
        """(source, target, edge line, index of the source in that line), in file order."""
        for e in self.edges:
            for index, s in enumerate(e.sources):
                yield s, e.target, e, index

    def input_map(self) -> Mapping[NodeId, list[NodeId]]:
        """Source ids by target, in edge order (what `inputs_of` copies). Shared: do not mutate."""
        return self._adjacency or self._inputs()

    def consumer_map(self) -> Mapping[NodeId, list[NodeId]]:
        """Target ids by source, in edge order (what `consumers_of` copies). Shared: do not mutate."""
        return self.analysis("consumer_map", Block._consumers)

    def inputs_of(self, node_id: NodeId) -> list[NodeId]:
        """Source ids feeding `node_id`, in edge order (the operand order)."""
        return list(self.input_map().get(node_id, ()))

    def consumers_of(self, node_id: NodeId) -> list[NodeId]:
        return list(self.consumer_map().get(node_id, ()))

    def topological_order(self) -> Optional[list[NodeId]]:
        """Node ids in a topological order (file order breaks ties), or None on a cycle."""
        order = self.analysis("topological_order", Block._topological_order)
        return list(order) if order is not None else None

    def _topological_order(self) -> Optional[list[NodeId]]:
        nodes = self.node_map()
        inputs = self.input_map()
        in_file_order = _file_order_if_topological(nodes, inputs, inputs.items())
        if in_file_order is not None:
            self._analyses[_FORWARD] = True  # (called by `analysis`) every wire forward: what `rewired` reads
            return in_file_order
        ids = list(nodes)
        position = {i: k for k, i in enumerate(ids)}
        indegree = [0] * len(ids)
        successors: list[list[int]] = [[] for _ in ids]
        for target, sources in inputs.items():
            t = position.get(target)
            if t is None:
                continue
            for s in sources:
                k = position.get(s)
                if k is not None:
                    indegree[t] += 1
                    successors[k].append(t)
        # The ready node first in the file goes first: a heap of file positions (ascending: a heap already).
        ready = [k for k in range(len(ids)) if indegree[k] == 0]
        order: list[NodeId] = []
        while ready:
            k = heappop(ready)
            order.append(ids[k])
            for t in successors[k]:
                indegree[t] -= 1
                if indegree[t] == 0:
                    heappush(ready, t)
        return order if len(order) == len(ids) else None

    # -- a repair's candidates -----------------------------------------------
    def share_wires(self, parent: "Block") -> None:
        """Take `parent`'s input map and topological order, where this block has its wires (the same edge
        tuple) and its node ids in order, the same one of them an `output` (a repair's candidate that rewrites
        node lines: compiler/repair/region.py verifies several per error)."""
        self._adjacency = parent.input_map()
        order = parent.analysis("topological_order", Block._topological_order)
        self.analysis("topological_order", lambda _: order)
        if parent._analyses.get(_FORWARD):
            self._analyses[_FORWARD] = True

    def rewired(self, parent: "Block", targets) -> None:
        """Take `parent`'s topological order where this block has its nodes (the same node tuple) and the same
        wires but those into `targets`, and every wire of the parent runs forward (`_file_order_if_topological`):
        only the wires into `targets` are checked."""
        parent.analysis("topological_order", Block._topological_order)
        if not parent._analyses.get(_FORWARD):
            return
        inputs = self.input_map()
        order = _file_order_if_topological(self.node_map(), inputs, [(t, inputs.get(t, ())) for t in targets])
        if order is not None:
            self.analysis("topological_order", lambda _: order)
            self._analyses[_FORWARD] = True

    # -- roles ------------------------------------------------------------
    @property
    def input_ops(self) -> list[Op]:
        sources = Group.SOURCE
        return [n.op for n in self.nodes if n.op in sources]

    def inferred_role(self) -> Role:
        """The role from the header's suffix and the input terminals."""
        two_inputs = not _TWO_INPUTS.isdisjoint(map(_op_of, self.nodes))
        words = set(self.name.lower().replace("-", "_").split("_"))
        if words & {"downsample", "reduction"}:
            return Role.REDUCTION_CELL if two_inputs else Role.DOWNSAMPLE
        if two_inputs:
            return Role.CELL
        if "stem" in words:
            return Role.STEM
        return Role.BASE

    def __str__(self) -> str:
        return dump_block(self)


@dataclass(slots=True, eq=True)
class Program:
    """The blocks of one file, in file order."""

    blocks: tuple[Block, ...]
    path: str = field(default="<string>", compare=False)

    def block(self, name: str) -> Optional[Block]:
        for b in self.blocks:
            if b.name == name:
                return b
        return None

    def __str__(self) -> str:
        return "\n\n".join(dump_block(b) for b in self.blocks)


def bound_param_text(node: Node) -> str:
    d = node.opdef
    if d is None or not d.params:
        return ""
    parts = []
    for p in d.params:
        value = node.params.get(p.name)
        if value is None:
            parts.append(f"{p.name}=<missing>")
        elif p.variadic and isinstance(value, TupleValue):
            parts.append(",".join(str(v) for v in value.items))
        else:
            parts.append(f"{p.name}={value}")
    return "[" + ", ".join(parts) + "]"


def _file_order_if_topological(nodes: Mapping[NodeId, Node], inputs: Mapping[NodeId, list], wires) -> Optional[list]:
    """The topological order (ties by file position) without a heap, when every wire runs forward in the
    file order with the one `output` moved last, as in most blocks: then the other nodes come in file
    order, and the output where the heap takes it, once its inputs and the nodes above its line are out
    (last, in most blocks; a repair's new nodes go below the output line). `wires`: the (target, sources)
    to check, `inputs.items()` but where the others are known to run forward (`Block.rewired`)."""
    outputs = [i for i, n in nodes.items() if n.op is _OUTPUT]
    if len(outputs) != 1:
        return None
    sink = outputs[0]
    # Ranks in the order to check: file positions, the output last (ranks only compare).
    rank = dict(zip(nodes, range(len(nodes))))
    at = rank[sink]  # the output's file position: the nodes above its line
    rank[sink] = len(nodes)
    ids = list(nodes)
    del ids[at]
    get = rank.get
    for target, sources in wires:
        r = get(target)
        if r is None:
            continue  # an undefined node: its wires do not order anything
        for s in sources:
            if get(s, -1) >= r:
                return None
    fed = inputs.get(sink, ())
    if at < len(ids) and ids[-1] not in fed:  # nodes below the output's line that it does not wait for
        ids.insert(max([at, *(rank[s] + (rank[s] < at) for s in fed if s in rank)]), sink)
    else:
        ids.append(sink)
    return ids


_OUTPUT = Op.OUTPUT
_FORWARD = "wires_forward"  # an analysis: every wire runs forward (the topological order is the file's)
_TWO_INPUTS = frozenset({Op.INPUT1, Op.INPUT2})
_op_of = attrgetter("op")


def dump_block(block: Block, role: Optional[Role] = None) -> str:
    """A readable canonical dump: `%id = op[params](%inputs)` per node, topologically."""
    role = role or block.inferred_role()
    order = block.topological_order() or [n.id for n in block.nodes]
    nodes = block.node_map()
    lines = [f"block {block.name} (role={role}):"]
    for node_id in order:
        node = nodes[node_id]
        operands = ", ".join(f"%{i}" for i in block.inputs_of(node_id))
        lines.append(f"  %{node_id} = {node.op_name}{bound_param_text(node)}({operands})"
                     f"  # line {node.span.line}")
    return "\n".join(lines)


def default_value(param_default: object) -> Optional[Value]:
    if param_default is REQUIRED:
        return None
    return Num(param_default)  # type: ignore[arg-type]
