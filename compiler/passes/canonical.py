"""Canonical form of blocks: structural hashing, exact equality and dedup.

Two blocks are *the same block* when their graphs are isomorphic with equal
node labels and equal operand positions where operand order matters:

* a node's label is its operation and its canonical *bound* parameters, so a
  default written or omitted (`stride=1`) makes no difference while any real
  parameter change does;
* node ids, the order of node lines and of edge lines, comments, whitespace
  and the `##Name##` header make no difference;
* the inputs of `concat` and `multiply` are ordered (their edges carry the
  operand position); those of `Add`, `Mul` and of one-input operations are not.

`canonical_hash` is a Weisfeiler-Lehman hash of that labelled graph: equal for
equal blocks, different for different blocks except on a (rare) WL collision.
`CanonicalStore` answers "seen before?" with a dict keyed by that hash and an
exact isomorphism check only when the hash matches, so a lookup costs O(1)
expected. `source_hash` is a cheaper, stricter fingerprint that keeps ids and
line order but ignores comments, whitespace, the header and default spelling.

Parameter values are compared in a canonical form: integer-valued numbers are
integers (`0` == `0.0`), sums and products of sizes are normalised polynomials
(`2*C` == `C*2` == `C+C`), a square spatial pair is its side (`(3,3)` == `3`),
and a tuple of reduction axes is a set. Exact division `/` and floor division
`//` are kept as opaque terms of their normalised operands, because `C/4*4`
carries the constraint `C % 4 == 0` that `C` does not: nothing that could
change a block's meaning is normalised away.
"""
from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, Generic, Hashable, Iterator, List, Optional, Tuple, TypeVar

import networkx as nx

from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue, Value
from nader.dsl.ir import Block, Node
from nader.dsl.ops import REGISTRY, Group, Op, ParamKind, lookup

#: Multi-input operations whose result does not depend on operand order.
COMMUTATIVE_OPS: frozenset[Op] = frozenset({Op.ADD, Op.MUL})

#: Operations whose operand order matters: every multi-input operation that is
#: not commutative (`concat`, `multiply`). A new multi-input operation lands
#: here unless it is declared commutative above, which keeps hashing sound.
ORDERED_INPUT_OPS: frozenset[Op] = frozenset(
    op for op, d in REGISTRY.items() if (d.arity.max is None or d.arity.max > 1) and op not in COMMUTATIVE_OPS)

HASH_VERSION = "nadc-canonical-1"
UNDEFINED_LABEL = "<undefined>"


# -- canonical parameter values ---------------------------------------------------

# A polynomial: {monomial: coefficient}; a monomial is a sorted tuple of (atom, power).
_Poly = Dict[Tuple[Tuple[str, int], ...], Fraction]


def _const(value: Fraction) -> _Poly:
    return {(): value} if value else {}


def _atom(name: str) -> _Poly:
    return {((name, 1),): Fraction(1)}


def _add(p: _Poly, q: _Poly, sign: int = 1) -> _Poly:
    out = dict(p)
    for mono, coef in q.items():
        out[mono] = out.get(mono, Fraction(0)) + sign * coef
        if not out[mono]:
            del out[mono]
    return out


def _mul(p: _Poly, q: _Poly) -> _Poly:
    out: _Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            powers = Counter(dict(m1))
            powers.update(dict(m2))
            mono = tuple(sorted(powers.items()))
            out[mono] = out.get(mono, Fraction(0)) + c1 * c2
            if not out[mono]:
                del out[mono]
    return out


def _fraction_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _poly_text(p: _Poly) -> str:
    if not p:
        return "0"
    terms = []
    for mono in sorted(p):
        coef = p[mono]
        factors = "*".join(name if power == 1 else f"{name}^{power}" for name, power in mono)
        if not factors:
            terms.append(_fraction_text(coef))
        elif coef == 1:
            terms.append(factors)
        else:
            terms.append(f"{_fraction_text(coef)}*{factors}")
    return " + ".join(terms)


def _constant_of(p: _Poly) -> Optional[Fraction]:
    if not p:
        return Fraction(0)
    if len(p) == 1 and () in p:
        return p[()]
    return None


def _poly(expr: Value) -> _Poly:
    if isinstance(expr, Num):
        v = expr.value
        return _const(Fraction(str(v)) if isinstance(v, float) else Fraction(v))
    if isinstance(expr, Sym):
        return _atom(expr.name)
    if isinstance(expr, Neg):
        return _add({}, _poly(expr.operand), -1)
    if isinstance(expr, BinOp):
        lhs, rhs = _poly(expr.lhs), _poly(expr.rhs)
        if expr.op == "+":
            return _add(lhs, rhs)
        if expr.op == "-":
            return _add(lhs, rhs, -1)
        if expr.op == "*":
            return _mul(lhs, rhs)
        a, b = _constant_of(lhs), _constant_of(rhs)
        if a is not None and b is not None and b != 0:
            # Constant folding is exact: a constant quotient has no constraint to keep,
            # except a non-integral exact division, which stays visible as a term.
            if expr.op == "//":
                return _const(Fraction(a // b))
            if (a / b).denominator == 1:
                return _const(a / b)
        name = "div" if expr.op == "/" else "floordiv"
        return _atom(f"{name}({_poly_text(lhs)}, {_poly_text(rhs)})")
    if isinstance(expr, TupleValue):
        return _atom("(" + ", ".join(_poly_text(_poly(i)) for i in expr.items) + ")")
    raise TypeError(f"not a value: {expr!r}")


def canonical_value(value: Value, kind: Optional[ParamKind] = None) -> str:
    """A string equal for parameter values that certainly mean the same."""
    if isinstance(value, TupleValue):
        items = [canonical_value(i) for i in value.items]
        if kind is ParamKind.SPATIAL and len(items) == 2 and items[0] == items[1]:
            return items[0]
        if kind is ParamKind.AXES:
            items = sorted(set(items))
            if len(items) == 1:
                return items[0]
        return "(" + ", ".join(items) + ")"
    return _poly_text(_poly(value))


def canonical_params(node: Node) -> Dict[str, str]:
    """The node's bound parameters (defaults filled in) in canonical form."""
    d = node.opdef
    if d is None:
        return {}
    out = {}
    for p in d.params:
        value = node.params.get(p.name)
        out[p.name] = "<missing>" if value is None else canonical_value(value, p.kind)
    return out


def node_label(node: Node) -> str:
    """Operation and canonical bound parameters: `Conv2d(out_channels=C, kernel_size=3, ...)`."""
    d = node.opdef
    if d is None:
        # Unknown operation: keep what was written, so different spellings stay different.
        return f"?{node.op_name}(" + ",".join(str(a) for a in node.args) + ")"
    params = canonical_params(node)
    if not params:
        return d.name
    return d.name + "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def is_ordered(node: Optional[Node]) -> bool:
    """Does the order of this node's operands matter? Unknown operations: yes (conservative)."""
    if node is None:
        return False
    d = node.opdef
    return d is None or d.op in ORDERED_INPUT_OPS


# -- the labelled graph -------------------------------------------------------------

NodeKey = Tuple[str, int]  # ("n", id) for a node line, ("u", id) for an id used but never defined, ("d", k) duplicates


@dataclass
class LabelledGraph:
    """A block as a labelled multigraph: node labels and (source, target, operand label) edges."""

    labels: Dict[NodeKey, str]
    edges: List[Tuple[NodeKey, NodeKey, str]]
    nodes: Dict[NodeKey, Optional[Node]] = field(default_factory=dict)

    def node_id(self, key: NodeKey) -> int:
        return key[1] if key[0] != "d" else (self.nodes[key].id if self.nodes.get(key) else -1)

    def to_networkx(self, labels: Optional[Dict[NodeKey, str]] = None) -> nx.MultiDiGraph:
        g = nx.MultiDiGraph()
        for key, label in (labels or self.labels).items():
            g.add_node(key, label=label)
        for s, t, lab in self.edges:
            g.add_edge(s, t, label=lab)
        return g


def block_graph(block: Block) -> LabelledGraph:
    labels: Dict[NodeKey, str] = {}
    nodes: Dict[NodeKey, Optional[Node]] = {}
    seen: set[int] = set()
    for k, n in enumerate(block.nodes):
        if n.id in seen:  # a duplicated id: keep the extra definition as an isolated node
            key: NodeKey = ("d", k)
        else:
            seen.add(n.id)
            key = ("n", n.id)
        labels[key] = node_label(n)
        nodes[key] = n

    def key_of(node_id: int) -> NodeKey:
        if node_id in seen:
            return ("n", node_id)
        key = ("u", node_id)
        labels.setdefault(key, UNDEFINED_LABEL)
        nodes.setdefault(key, None)
        return key

    position: Counter = Counter()
    edges = []
    for s, t, _, _ in block.wires():
        target = key_of(t)
        ordered = is_ordered(nodes.get(target))
        edges.append((key_of(s), target, str(position[t]) if ordered else ""))
        position[t] += 1
    return LabelledGraph(labels, edges, nodes)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def wl_rounds(graph: LabelledGraph, max_rounds: Optional[int] = None,
              directions: str = "both") -> List[Dict[NodeKey, str]]:
    """Weisfeiler-Lehman refinement over both edge directions, with operand labels on edges.

    Round 0 is the node labels (hashed); each further round hashes a node's
    label with the sorted multisets of (operand label, neighbour label) of its
    incoming and outgoing edges. Stops once the partition no longer refines,
    or after `max_rounds` rounds. `directions` "in" or "out" looks one way only
    (what is upstream, or downstream, of each node).
    """
    incoming: Dict[NodeKey, List[Tuple[str, NodeKey]]] = {k: [] for k in graph.labels}
    outgoing: Dict[NodeKey, List[Tuple[str, NodeKey]]] = {k: [] for k in graph.labels}
    for s, t, lab in graph.edges:
        incoming[t].append((lab, s))
        outgoing[s].append((lab, t))
    current = {k: _digest(v)[:32] for k, v in graph.labels.items()}
    rounds = [current]
    classes = len(set(current.values()))
    limit = max_rounds if max_rounds is not None else len(graph.labels) + 1
    for _ in range(limit):
        nxt = {}
        for k, lab in current.items():
            ins = sorted(f"{el}:{current[s]}" for el, s in incoming[k]) if directions != "out" else []
            outs = sorted(f"{el}:{current[t]}" for el, t in outgoing[k]) if directions != "in" else []
            nxt[k] = _digest(lab + "|<" + ",".join(ins) + "|>" + ",".join(outs))[:32]
        rounds.append(nxt)
        new_classes = len(set(nxt.values()))
        current = nxt
        if new_classes == classes and max_rounds is None:
            break
        classes = new_classes
    return rounds


def graph_hash(graph: LabelledGraph) -> str:
    final = wl_rounds(graph)[-1]
    body = "\n".join(sorted(final.values()))
    return _digest(f"{HASH_VERSION}\n{len(graph.labels)} {len(graph.edges)}\n{body}")


def canonical_hash(block: Block) -> str:
    """The structural hash: independent of ids, line and edge order, comments and the name."""
    return graph_hash(block_graph(block))


def source_hash(block: Block) -> str:
    """A fingerprint of the block as written, ignoring comments, whitespace, the header and
    how defaults and aliases are spelled; ids and the order of lines still count."""
    lines = [f"{n.id}:{node_label(n)}" for n in block.nodes]
    lines += [f"{','.join(map(str, e.sources))}->{e.target}" for e in block.edges]
    return _digest("nadc-source-1\n" + "\n".join(lines))


# -- exact equality -------------------------------------------------------------------

def _edge_match(e1: dict, e2: dict) -> bool:
    # MultiDiGraph: the dicts hold every parallel edge between the two nodes, by key.
    return sorted(d["label"] for d in e1.values()) == sorted(d["label"] for d in e2.values())


def _node_match(n1: dict, n2: dict) -> bool:
    return n1["label"] == n2["label"]


def _refined(graph: LabelledGraph) -> nx.MultiDiGraph:
    # Final WL colours are invariant under isomorphism and imply the node labels, so
    # matching on them prunes VF2's search without changing its answer.
    return graph.to_networkx(wl_rounds(graph)[-1])


def isomorphism(a: LabelledGraph, b: LabelledGraph) -> Optional[Dict[NodeKey, NodeKey]]:
    """A label- and operand-preserving isomorphism from `a` to `b`, or None."""
    if len(a.labels) != len(b.labels) or len(a.edges) != len(b.edges):
        return None
    if Counter(a.labels.values()) != Counter(b.labels.values()):
        return None
    matcher = nx.algorithms.isomorphism.MultiDiGraphMatcher(
        _refined(a), _refined(b), node_match=_node_match, edge_match=_edge_match)
    for mapping in matcher.isomorphisms_iter():
        return dict(mapping)
    return None


def equivalent(a: Block, b: Block) -> bool:
    """Exactly: do the two blocks have the same canonical form?"""
    return isomorphism(block_graph(a), block_graph(b)) is not None


# -- dedup ---------------------------------------------------------------------------------

V = TypeVar("V")


@dataclass
class _Entry(Generic[V]):
    graph: LabelledGraph
    nx_graph: nx.MultiDiGraph
    value: Any


class CanonicalStore(Generic[V]):
    """A set of blocks up to canonical equality, with a value per class.

    Buckets are keyed by `canonical_hash`; a lookup compares exactly (VF2 on
    WL-refined labels) only against the blocks in its bucket, which holds one
    block unless two different blocks collide.
    """

    def __init__(self) -> None:
        self._buckets: Dict[str, List[_Entry]] = {}
        self._size = 0
        self.exact_checks = 0  # how many isomorphism tests were run (for tests and stats)

    def __len__(self) -> int:
        return self._size

    def _find(self, graph: LabelledGraph, key: str, refined: nx.MultiDiGraph) -> Optional[_Entry]:
        for entry in self._buckets.get(key, ()):
            self.exact_checks += 1
            if len(entry.graph.edges) != len(graph.edges):
                continue
            matcher = nx.algorithms.isomorphism.MultiDiGraphMatcher(
                entry.nx_graph, refined, node_match=_node_match, edge_match=_edge_match)
            if matcher.is_isomorphic():
                return entry
        return None

    def lookup(self, block: Block) -> Tuple[bool, Any]:
        """(found, value stored with the equal block)."""
        graph = block_graph(block)
        entry = self._find(graph, graph_hash(graph), _refined(graph))
        return (True, entry.value) if entry else (False, None)

    def __contains__(self, block: Block) -> bool:
        return self.lookup(block)[0]

    def add(self, block: Block, value: Any = None) -> Tuple[bool, Any]:
        """Insert unless an equal block is stored. Returns (inserted, value of the stored class)."""
        graph = block_graph(block)
        key = graph_hash(graph)
        refined = _refined(graph)
        entry = self._find(graph, key, refined)
        if entry is not None:
            return False, entry.value
        self._buckets.setdefault(key, []).append(_Entry(graph, refined, value))
        self._size += 1
        return True, value

    def values(self) -> Iterator[Any]:
        for bucket in self._buckets.values():
            for entry in bucket:
                yield entry.value


def group_equal(blocks: List[Tuple[Hashable, Block]]) -> List[List[Hashable]]:
    """Partition labelled blocks into classes of canonically equal ones (first-seen order)."""
    store: CanonicalStore = CanonicalStore()
    groups: List[List[Hashable]] = []
    for label, block in blocks:
        inserted, index = store.add(block, len(groups))
        if inserted:
            groups.append([label])
        else:
            groups[index].append(label)
    return groups


# -- structural diff -------------------------------------------------------------------------

_ALIGN_ROUNDS = 3  # WL depth used to score candidate node pairs
_UNIT = 1 << 16  # edit-cost unit; smaller amounts only break ties


def _op_of(graph: LabelledGraph, key: NodeKey) -> str:
    node = graph.nodes.get(key)
    if node is None:
        return graph.labels[key]
    return node.opdef.name if node.opdef else "?" + node.op_name


def _is_terminal(graph: LabelledGraph, key: NodeKey) -> bool:
    node = graph.nodes.get(key)
    return bool(node is not None and node.opdef is not None and node.opdef.op in _TERMINALS)


_TERMINALS = Group.TERMINAL


@dataclass
class NodeChange:
    """A node matched across the two blocks whose operation or parameters differ."""

    a: Node
    b: Node
    op: Optional[Tuple[str, str]]  # (old, new) when the operation changed
    params: Dict[str, Tuple[str, str]]  # name -> (old, new) as written (defaults filled in)


@dataclass
class BlockDiff:
    a: Block
    b: Block
    mapping: Dict[int, int]  # a node id -> b node id, matched nodes
    removed: List[Node]
    added: List[Node]
    changed: List[NodeChange]
    edges_removed: List[Tuple[int, int, str]]  # (source, target, operand) in a's ids
    edges_added: List[Tuple[int, int, str]]  # in b's ids

    @property
    def equal(self) -> bool:
        return not (self.removed or self.added or self.changed or self.edges_removed or self.edges_added)


class _Aligner:
    """Finds a node matching between two graphs that makes the edit small.

    1. Seed: terminals and pairs whose deep WL labels are equal and unique on both sides.
    2. Propagate: every same-operation pair is a candidate, scored by WL-feature agreement;
       matching a pair raises the score of its neighbours' pairs (same direction and operand
       label), best-scored first; pairs of neighbours whose operations differ come last.
    3. Improve: local search (swap, match, rematch, unmatch) on the exact edit cost:
       1 per changed parameter set, 2 per changed operation, 1 per added or removed node,
       1 per added or removed edge.
    Steps 2 and 3 run three times (all features, upstream-only, downstream-only); the
    cheapest result wins.
    """

    def __init__(self, ga: LabelledGraph, gb: LabelledGraph, rank_a: Dict[NodeKey, int], rank_b: Dict[NodeKey, int]):
        self.ga, self.gb = ga, gb
        self.rank_a, self.rank_b = rank_a, rank_b
        self.ops_a = {k: _op_of(ga, k) for k in ga.labels}
        self.ops_b = {k: _op_of(gb, k) for k in gb.labels}
        self.full_a = wl_rounds(ga, _ALIGN_ROUNDS)
        self.full_b = wl_rounds(gb, _ALIGN_ROUNDS)
        # Features that survive edits elsewhere: labels with less detail (operations only,
        # or bare topology), and refinement looking only upstream or only downstream.
        self.features: List[Tuple[int, str, List[Dict[NodeKey, str]], List[Dict[NodeKey, str]]]] = []
        for weight, la, lb in ((6, ga.labels, gb.labels), (4, self.ops_a, self.ops_b),
                               (2, {k: "" for k in ga.labels}, {k: "" for k in gb.labels})):
            for directions in ("both", "in", "out"):
                self.features.append((weight, directions,
                                      wl_rounds(LabelledGraph(la, ga.edges), _ALIGN_ROUNDS, directions),
                                      wl_rounds(LabelledGraph(lb, gb.edges), _ALIGN_ROUNDS, directions)))
        self.view = "all"  # which one-way features count: "all", "in" or "out"
        self.in_a, self.out_a = self._adjacency(ga)
        self.in_b, self.out_b = self._adjacency(gb)
        self.pairs_a = self._pairs(ga)
        self.pairs_b = self._pairs(gb)
        self.incident_a: Dict[NodeKey, List[Tuple[NodeKey, NodeKey]]] = {k: [] for k in ga.labels}
        for p in self.pairs_a:
            self.incident_a[p[0]].append(p)
            if p[1] != p[0]:
                self.incident_a[p[1]].append(p)
        self.m: Dict[NodeKey, NodeKey] = {}
        self.mb: Dict[NodeKey, NodeKey] = {}

    @staticmethod
    def _adjacency(g: LabelledGraph):
        ins: Dict[NodeKey, List[Tuple[str, NodeKey]]] = {k: [] for k in g.labels}
        outs: Dict[NodeKey, List[Tuple[str, NodeKey]]] = {k: [] for k in g.labels}
        for s, t, lab in g.edges:
            ins[t].append((lab, s))
            outs[s].append((lab, t))
        return ins, outs

    @staticmethod
    def _pairs(g: LabelledGraph) -> Dict[Tuple[NodeKey, NodeKey], Counter]:
        pairs: Dict[Tuple[NodeKey, NodeKey], Counter] = {}
        for s, t, lab in g.edges:
            pairs.setdefault((s, t), Counter())[lab] += 1
        return pairs

    # -- scoring ----------------------------------------------------------------------
    def compatible(self, a: NodeKey, b: NodeKey) -> bool:
        if (self.ga.nodes.get(a) is None) != (self.gb.nodes.get(b) is None):
            return False  # an id that edges use but no line defines matches only its like
        ta, tb = _is_terminal(self.ga, a), _is_terminal(self.gb, b)
        if ta or tb:
            return ta and tb and self.ops_a[a] == self.ops_b[b]
        return True

    def similarity(self, a: NodeKey, b: NodeKey) -> int:
        score = 100 if self.ops_a[a] == self.ops_b[b] else 30 if self.same_kind(a, b) else 0
        if self.ga.labels[a] == self.gb.labels[b]:
            score += 20
        for weight, directions, fa, fb in self.features:
            if self.view != "all" and directions not in (self.view, "both"):
                continue
            for d in range(1, _ALIGN_ROUNDS + 1):
                score += weight * (fa[d][a] == fb[d][b])
        return score

    def support(self, a: NodeKey, b: NodeKey) -> int:
        count = 0
        for mine, theirs in ((self.in_a[a], self.in_b[b]), (self.out_a[a], self.out_b[b])):
            targets = Counter((lab, n) for lab, n in theirs)
            for lab, n in mine:
                image = self.m.get(n)
                if image is not None and targets[(lab, image)] > 0:
                    targets[(lab, image)] -= 1
                    count += 1
        return count

    # -- phases 1 and 2 ------------------------------------------------------------------
    def _order(self, a: NodeKey, b: NodeKey) -> tuple:
        ra, rb = self.rank_a.get(a, 1 << 30), self.rank_b.get(b, 1 << 30)
        return (abs(ra - rb), ra, rb)

    def _push(self, heap: list, a: NodeKey, b: NodeKey, bonus: int = 0) -> None:
        score = self.similarity(a, b) + 50 * self.support(a, b) + bonus
        heapq.heappush(heap, (-score, self._order(a, b), a, b))

    def _match(self, a: NodeKey, b: NodeKey, heap: list, other: list) -> None:
        self.m[a], self.mb[b] = b, a
        for mine, theirs in ((self.in_a[a], self.in_b[b]), (self.out_a[a], self.out_b[b])):
            for lab, a2 in mine:
                if a2 in self.m:
                    continue
                for lab2, b2 in theirs:
                    if lab2 == lab and b2 not in self.mb and self.compatible(a2, b2):
                        # Same operation first; a changed operation only once those run out.
                        self._push(heap if self.ops_a[a2] == self.ops_b[b2] else other, a2, b2)

    def propagate(self) -> None:
        heap: list = []
        other: list = []  # neighbour pairs whose operations differ
        deep_a, deep_b = self.full_a[-1], self.full_b[-1]
        count_a, count_b = Counter(deep_a.values()), Counter(deep_b.values())
        for a in self.ga.labels:
            for b in self.gb.labels:
                if self.ops_a[a] != self.ops_b[b] or not self.compatible(a, b):
                    continue
                bonus = 500 if _is_terminal(self.ga, a) else 0
                if deep_a[a] == deep_b[b] and count_a[deep_a[a]] == 1 and count_b[deep_b[b]] == 1:
                    bonus = 1000  # same neighbourhood three steps out, and unique on both sides
                self._push(heap, a, b, bonus)
        while heap or other:
            _, _, a, b = heapq.heappop(heap if heap else other)
            if a in self.m or b in self.mb:
                continue
            self._match(a, b, heap, other)

    # -- phase 3 ---------------------------------------------------------------------------
    # Costs are scaled by _UNIT; below it, a tie-breaker prefers changing an operation into
    # one of the same kind (ReLU -> GELU) over one of another kind (ReLU -> BN).
    def node_cost(self, a: NodeKey, b: Optional[NodeKey]) -> int:
        if b is None:
            return _UNIT
        if self.ga.labels[a] == self.gb.labels[b]:
            return 0
        if self.ops_a[a] == self.ops_b[b]:
            return _UNIT
        return 2 * _UNIT + (0 if self.same_kind(a, b) else 1)

    def same_kind(self, a: NodeKey, b: NodeKey) -> bool:
        da, db = lookup(self.ops_a[a]), lookup(self.ops_b[b])
        return da is not None and db is not None and da.categories == db.categories

    def pair_score(self, p: Tuple[NodeKey, NodeKey]) -> int:
        x, y = self.m.get(p[0]), self.m.get(p[1])
        if x is None or y is None:
            return 0
        theirs = self.pairs_b.get((x, y))
        if not theirs:
            return 0
        mine = self.pairs_a[p]
        if not (is_ordered(self.ga.nodes.get(p[1])) and is_ordered(self.gb.nodes.get(y))):
            return min(sum(mine.values()), sum(theirs.values()))  # operand positions do not matter here
        return sum(min(c, theirs[lab]) for lab, c in mine.items())

    def local_cost(self, nodes_a: List[NodeKey], nodes_b: List[NodeKey]) -> int:
        cost = sum(self.node_cost(a, self.m.get(a)) for a in set(nodes_a))
        cost += sum(_UNIT for b in set(nodes_b) if b not in self.mb)
        pairs = {p for a in nodes_a for p in self.incident_a[a]}
        return cost - 2 * _UNIT * sum(self.pair_score(p) for p in pairs)

    def _assign(self, changes: List[Tuple[NodeKey, Optional[NodeKey]]]) -> None:
        for a, _ in changes:
            old = self.m.pop(a, None)
            if old is not None and self.mb.get(old) == a:
                del self.mb[old]
        for a, b in changes:
            if b is not None:
                self.m[a], self.mb[b] = b, a

    def _try(self, changes: List[Tuple[NodeKey, Optional[NodeKey]]]) -> bool:
        nodes_a = [a for a, _ in changes]
        nodes_b = [b for _, b in changes if b is not None] + [self.m[a] for a in nodes_a if a in self.m]
        before = self.local_cost(nodes_a, nodes_b)
        undo = [(a, self.m.get(a)) for a in nodes_a]
        self._assign(changes)
        if self.local_cost(nodes_a, nodes_b) < before:
            return True
        self._assign(undo)
        return False

    def improve(self, max_passes: int = 20) -> None:
        keys_a, keys_b = list(self.ga.labels), list(self.gb.labels)
        for _ in range(max_passes):
            improved = False
            matched = [a for a in keys_a if a in self.m]
            for i, a1 in enumerate(matched):
                for a2 in matched[i + 1:]:
                    b1, b2 = self.m.get(a1), self.m.get(a2)
                    if b1 is None or b2 is None:
                        continue
                    if self.compatible(a1, b2) and self.compatible(a2, b1):
                        improved |= self._try([(a1, b2), (a2, b1)])
            free_b = [b for b in keys_b if b not in self.mb]
            for a in keys_a:
                for b in free_b:
                    if b in self.mb or not self.compatible(a, b):
                        continue
                    improved |= self._try([(a, b)])  # match a free node, or move a matched one
            free_b = [b for b in keys_b if b not in self.mb]
            for a in keys_a:
                if a in self.m:
                    continue
                # Take a matched node's partner, moving that node to a free one of its kind.
                for b in keys_b:
                    a2 = self.mb.get(b)
                    if a in self.m or a2 is None or not self.compatible(a, b):
                        continue
                    for b2 in free_b:
                        if b2 not in self.mb and self.ops_b[b2] == self.ops_b[b] and self.compatible(a2, b2) \
                                and self._try([(a, b), (a2, b2)]):
                            improved = True
                            break
            for a in keys_a:
                b = self.m.get(a)
                if b is None:
                    continue
                for a2 in keys_a:
                    if a2 not in self.m and self.compatible(a2, b) and self._try([(a, None), (a2, b)]):
                        improved = True
                        break
                if a in self.m:
                    improved |= self._try([(a, None)])
            if not improved:
                return

    def total_cost(self) -> int:
        cost = sum(self.node_cost(a, self.m.get(a)) for a in self.ga.labels)
        cost += _UNIT * sum(1 for b in self.gb.labels if b not in self.mb)
        cost += _UNIT * (len(self.ga.edges) + len(self.gb.edges))
        return cost - 2 * _UNIT * sum(self.pair_score(p) for p in self.pairs_a)

    def align(self) -> Dict[NodeKey, NodeKey]:
        exact = isomorphism(self.ga, self.gb)
        if exact is not None:
            return exact
        # Three starts: all features, then upstream-only and downstream-only ones, which
        # stay informative on the far side of an inserted or removed node. Keep the cheapest.
        best: Optional[Tuple[int, Dict[NodeKey, NodeKey]]] = None
        for view in ("all", "in", "out"):
            self.view, self.m, self.mb = view, {}, {}
            self.propagate()
            self.improve()
            cost = self.total_cost()
            if best is None or cost < best[0]:
                best = (cost, dict(self.m))
        return best[1]


def _ranks(block: Block, graph: LabelledGraph) -> Dict[NodeKey, int]:
    order = block.topological_order() or [n.id for n in block.nodes]
    rank = {("n", i): k for k, i in enumerate(order)}
    for k, key in enumerate(graph.labels):
        rank.setdefault(key, len(order) + k)
    return rank


def _param_text(node: Node, name: str) -> str:
    value = node.params.get(name)
    return "-" if value is None else str(value)


def block_diff(a: Block, b: Block) -> BlockDiff:
    """What turned `a` into `b`, under the best structural alignment found (not by ids)."""
    ga, gb = block_graph(a), block_graph(b)
    mapping = _Aligner(ga, gb, _ranks(a, ga), _ranks(b, gb)).align()
    inverse = {v: k for k, v in mapping.items()}
    removed = [ga.nodes[k] for k in ga.labels if k not in mapping and ga.nodes.get(k) is not None]
    added = [gb.nodes[k] for k in gb.labels if k not in inverse and gb.nodes.get(k) is not None]
    changed = []
    for ka, kb in mapping.items():
        na, nb = ga.nodes.get(ka), gb.nodes.get(kb)
        if na is None or nb is None or ga.labels[ka] == gb.labels[kb]:
            continue
        op_a, op_b = _op_of(ga, ka), _op_of(gb, kb)
        pa, pb = canonical_params(na), canonical_params(nb)
        params = {}
        for name in list(pa) + [n for n in pb if n not in pa]:
            if pa.get(name) != pb.get(name):
                params[name] = (_param_text(na, name), _param_text(nb, name))
        if op_a == op_b and op_a.startswith("?") and not params:
            params["arguments"] = (",".join(map(str, na.args)), ",".join(map(str, nb.args)))
        changed.append(NodeChange(na, nb, (op_a, op_b) if op_a != op_b else None, params))
    def positions_matter(ta: Optional[NodeKey], tb: Optional[NodeKey]) -> bool:
        # An operation changed between ordered and unordered (`concat` -> `Add`): compare
        # its edges without operand positions, so only the operation shows as changed.
        return ta is None or tb is None or (is_ordered(ga.nodes.get(ta)) and is_ordered(gb.nodes.get(tb)))

    edges_b = Counter((s, t, lab if positions_matter(inverse.get(t), t) else "") for s, t, lab in gb.edges)
    edges_removed = []
    for s, t, lab in ga.edges:
        image = (mapping.get(s), mapping.get(t), lab if positions_matter(t, mapping.get(t)) else "")
        if edges_b.get(image, 0) > 0:
            edges_b[image] -= 1
        else:
            edges_removed.append((ga.node_id(s), ga.node_id(t), lab))
    edges_added = []
    for s, t, lab in gb.edges:
        key = (s, t, lab if positions_matter(inverse.get(t), t) else "")
        if edges_b.get(key, 0) > 0:
            edges_b[key] -= 1
            edges_added.append((gb.node_id(s), gb.node_id(t), lab))
    id_map = {ga.node_id(ka): gb.node_id(kb) for ka, kb in mapping.items() if ka[0] == "n"}
    rank_a, rank_b = _ranks(a, ga), _ranks(b, gb)
    removed.sort(key=lambda n: rank_a.get(("n", n.id), 0))
    added.sort(key=lambda n: rank_b.get(("n", n.id), 0))
    changed.sort(key=lambda c: rank_a.get(("n", c.a.id), 0))
    return BlockDiff(a, b, id_map, removed, added, changed, edges_removed, edges_added)
