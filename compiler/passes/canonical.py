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

`canonical_hash` is the SHA-256 of that labelled graph's canonical form
(`graph_canon.py`: refinement, then individualisation of symmetric leftovers),
so equal blocks hash equal and different blocks differently (short of a SHA-256
collision), in near-linear time. `CanonicalStore` answers "seen before?" with a
dict keyed by that hash and compares canonical forms exactly when it matches.
`source_hash` is a cheaper, stricter fingerprint that keeps ids and line order
but ignores comments, whitespace, the header and default spelling.

`HASH_VERSION` enters every hash: hashes stored by an older version (1 was a
Weisfeiler-Lehman hash) differ from today's for the same block.

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
import json
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, Generic, Hashable, Iterator, List, Optional, Tuple, TypeVar

from nader.compiler.passes.graph_canon import Certificate, canonical_order
from nader.dsl.expr import BinOp, Neg, Num, Sym, TupleValue, Value
from nader.dsl.ir import Block, Node
from nader.dsl.ops import Group, Op, ParamKind

#: Multi-input operations whose result does not depend on operand order (declared in the registry).
COMMUTATIVE_OPS: frozenset[Op] = Group.COMMUTATIVE

#: Operations whose operand order matters: every multi-input operation that is
#: not declared commutative (`concat`, `multiply`), which keeps hashing sound.
ORDERED_INPUT_OPS: frozenset[Op] = Group.ORDERED_INPUT

HASH_VERSION = "nadc-canonical-2"  # 1: Weisfeiler-Lehman colours; 2: canonical labelling
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


# Labels of known operations by (operation, arguments): a block repeats a few labels many
# times, and canonical values are the costly part of hashing a large block. Arguments compare
# by value (`1` == `1.0`), which canonical values equate anyway; unknown operations keep their
# spelling, so they are not cached. Bounded: cleared when full.
_LABELS: Dict[tuple, str] = {}
_LABELS_MAX = 1 << 14


def node_label(node: Node) -> str:
    """Operation and canonical bound parameters: `Conv2d(out_channels=C, kernel_size=3, ...)`."""
    d = node.opdef
    if d is None:
        # Unknown operation: keep what was written, so different spellings stay different.
        return f"?{node.op_name}(" + ",".join(str(a) for a in node.args) + ")"
    key = (d.name, node.args)
    label = _LABELS.get(key)
    if label is None:
        params = canonical_params(node)
        label = d.name if not params else d.name + "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
        if len(_LABELS) >= _LABELS_MAX:
            _LABELS.clear()
        _LABELS[key] = label
    return label


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


def _canonical(graph: LabelledGraph) -> Tuple[Certificate, List[NodeKey]]:
    keys = list(graph.labels)
    index = {k: i for i, k in enumerate(keys)}
    certificate, order = canonical_order([graph.labels[k] for k in keys],
                                         [(index[s], index[t], lab) for s, t, lab in graph.edges])
    return certificate, [keys[i] for i in order]


def _certificate_hash(certificate: Certificate) -> str:
    labels, edge_labels, edges = certificate
    runs: List[list] = []
    for label in labels:  # the canonical order keeps equal labels together
        if runs and runs[-1][0] == label:
            runs[-1][1] += 1
        else:
            runs.append([label, 1])
    flat = [x for edge in edges for x in edge]
    return _digest(json.dumps([HASH_VERSION, runs, list(edge_labels), flat], separators=(",", ":")))


def graph_hash(graph: LabelledGraph) -> str:
    return _certificate_hash(_canonical(graph)[0])


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

def isomorphism(a: LabelledGraph, b: LabelledGraph) -> Optional[Dict[NodeKey, NodeKey]]:
    """A label- and operand-preserving isomorphism from `a` to `b`, or None."""
    if len(a.labels) != len(b.labels) or len(a.edges) != len(b.edges):
        return None
    if Counter(a.labels.values()) != Counter(b.labels.values()):
        return None
    (cert_a, order_a), (cert_b, order_b) = _canonical(a), _canonical(b)
    return dict(zip(order_a, order_b)) if cert_a == cert_b else None


def equivalent(a: Block, b: Block) -> bool:
    """Exactly: do the two blocks have the same canonical form?"""
    return isomorphism(block_graph(a), block_graph(b)) is not None


# -- dedup ---------------------------------------------------------------------------------

V = TypeVar("V")


@dataclass
class _Entry(Generic[V]):
    certificate: Certificate
    value: Any


class CanonicalStore(Generic[V]):
    """A set of blocks up to canonical equality, with a value per class.

    Buckets are keyed by `canonical_hash`; a lookup compares canonical forms exactly
    only against the blocks in its bucket, which holds one block unless two
    different canonical forms collide in SHA-256.
    """

    def __init__(self) -> None:
        self._buckets: Dict[str, List[_Entry]] = {}
        self._size = 0
        self.exact_checks = 0  # how many canonical forms were compared (for tests and stats)

    def __len__(self) -> int:
        return self._size

    def _find(self, certificate: Certificate, key: str) -> Optional[_Entry]:
        for entry in self._buckets.get(key, ()):
            self.exact_checks += 1
            if entry.certificate == certificate:
                return entry
        return None

    def lookup(self, block: Block) -> Tuple[bool, Any]:
        """(found, value stored with the equal block)."""
        certificate = _canonical(block_graph(block))[0]
        entry = self._find(certificate, _certificate_hash(certificate))
        return (True, entry.value) if entry else (False, None)

    def __contains__(self, block: Block) -> bool:
        return self.lookup(block)[0]

    def add(self, block: Block, value: Any = None) -> Tuple[bool, Any]:
        """Insert unless an equal block is stored. Returns (inserted, value of the stored class)."""
        certificate = _canonical(block_graph(block))[0]
        key = _certificate_hash(certificate)
        entry = self._find(certificate, key)
        if entry is not None:
            return False, entry.value
        self._buckets.setdefault(key, []).append(_Entry(certificate, value))
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
