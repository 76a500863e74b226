"""Structural diff of two blocks (`nadc diff`, the search report, FAIRNAD's hints).

Why apart from hashing: a diff needs a *good* node matching between two different
graphs, which is a heuristic search (`_Aligner`), while hashing needs an exact
canonical form (`canonical.py`). Nodes are matched by the best structural alignment
found, not by id; an isomorphic copy (any numbering, any line order) shows no
difference. `render_text` is the text `nadc diff` prints; `pair_blocks` pairs the
blocks of two files the way `nadc diff` does; `diff_json` is its `--format json` object.
"""
from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from nader.compiler.passes.canonical import (LabelledGraph, NodeKey, block_graph, canonical_hash, canonical_params,
                                             is_ordered, isomorphism)
from nader.dsl.ir import Block, Node, id_sort_key
from nader.dsl.ops import Group, lookup


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def wl_rounds(graph: LabelledGraph, rounds: int, directions: str = "both") -> List[Dict[NodeKey, str]]:
    """`rounds` rounds of Weisfeiler-Lehman refinement, with operand labels on edges: alignment features.

    Round 0 is the node labels (hashed); each further round hashes a node's
    label with the sorted multisets of (operand label, neighbour label) of its
    incoming and outgoing edges. `directions` "in" or "out" looks one way only
    (what is upstream, or downstream, of each node).
    """
    incoming: Dict[NodeKey, List[Tuple[str, NodeKey]]] = {k: [] for k in graph.labels}
    outgoing: Dict[NodeKey, List[Tuple[str, NodeKey]]] = {k: [] for k in graph.labels}
    for s, t, lab in graph.edges:
        incoming[t].append((lab, s))
        outgoing[s].append((lab, t))
    current = {k: _digest(v)[:32] for k, v in graph.labels.items()}
    out = [current]
    for _ in range(rounds):
        nxt = {}
        for k, lab in current.items():
            ins = sorted(f"{el}:{current[s]}" for el, s in incoming[k]) if directions != "out" else []
            outs = sorted(f"{el}:{current[t]}" for el, t in outgoing[k]) if directions != "in" else []
            nxt[k] = _digest(lab + "|<" + ",".join(ins) + "|>" + ",".join(outs))[:32]
        out.append(nxt)
        current = nxt
    return out


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


# -- text -------------------------------------------------------------------------------------

def pair_blocks(blocks_a: List[Block], blocks_b: List[Block]):
    """Pairs by name, then the unpaired ones in file order: (pairs, only in a, only in b)."""
    pairs, rest_a = [], []
    names_b = {b.name: b for b in blocks_b}
    used = set()
    for a in blocks_a:
        b = names_b.get(a.name)
        if b is not None and b.name not in used:
            pairs.append((a, b))
            used.add(b.name)
        else:
            rest_a.append(a)
    rest_b = [b for b in blocks_b if b.name not in used]
    for a, b in zip(rest_a, rest_b):
        pairs.append((a, b))
    return pairs, rest_a[len(rest_b):], rest_b[len(rest_a):]


def _operand(label: str) -> str:
    return f" (operand {int(label) + 1})" if label else ""


def _edge(s: int, t: int, label: str) -> str:
    return f"{s}->{t}{_operand(label)}"


def _bound(node: Node) -> str:
    """The operation with its bound parameters, defaults filled in: `concat(dim=1)`."""
    if not node.params:
        return node.op_name if node.opdef or not node.args else f"{node.op_name}({','.join(map(str, node.args))})"
    return f"{node.op_name}(" + ",".join(f"{k}={v}" for k, v in node.params.items()) + ")"


def render_text(d: BlockDiff, file_a: str, file_b: str) -> str:
    """The diff as `nadc diff` prints it: changed, removed and added nodes, then edges, then counts."""
    out = [f"--- {file_a} ({d.a.name})", f"+++ {file_b} ({d.b.name})"]
    for c in d.changed:
        ids = str(c.a.id) if c.a.id == c.b.id else f"{c.a.id} (b: {c.b.id})"
        if c.op:
            out.append(f"~ node {ids}: {_bound(c.a)} -> {_bound(c.b)}")
            continue
        params = ", ".join(f"{name}: {old} -> {new}" for name, (old, new) in c.params.items())
        out.append(f"~ node {ids}: {c.a.op_name}  {params}")
    out += [f"- node {n.source_text()}" for n in d.removed]
    out += [f"+ node {n.source_text()}" for n in d.added]
    out += [f"- edge {_edge(*e)}" for e in d.edges_removed]
    out += [f"+ edge {_edge(*e)}" for e in d.edges_added]
    counts = (f"{len(d.changed)} changed, {len(d.removed)} removed, {len(d.added)} added nodes; "
              f"{len(d.edges_removed)} removed, {len(d.edges_added)} added edges")
    out.append(counts)
    return "\n".join(out) + "\n"


def _node_json(node: Node) -> dict:
    return {"id": node.id, "op": node.op_name, "line": node.span.line, "text": node.source_text(),
            "params": {k: str(v) for k, v in node.params.items()}}


def diff_json(d: BlockDiff, file_a: str, file_b: str) -> dict:
    return {
        "a": {"file": file_a, "block": d.a.name, "hash": canonical_hash(d.a)},
        "b": {"file": file_b, "block": d.b.name, "hash": canonical_hash(d.b)},
        "equal": d.equal,
        "nodes": {
            "changed": [{"a_id": c.a.id, "b_id": c.b.id, "op": c.b.op_name if c.op is None else None,
                         "op_change": list(c.op) if c.op else None,
                         "params": {k: {"old": old, "new": new} for k, (old, new) in c.params.items()}}
                        for c in d.changed],
            "removed": [_node_json(n) for n in d.removed],
            "added": [_node_json(n) for n in d.added],
        },
        "edges": {
            "removed": [{"source": s, "target": t, "operand": int(lab) if lab else None} for s, t, lab in d.edges_removed],
            "added": [{"source": s, "target": t, "operand": int(lab) if lab else None} for s, t, lab in d.edges_added],
        },
        "mapping": {str(k): v for k, v in sorted(d.mapping.items(), key=lambda kv: id_sort_key(kv[0]))},
    }
