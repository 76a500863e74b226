"""Canonical labelling of small labelled directed multigraphs, in near-linear time.

Why its own module: block hashing needs a *true* canonical form (isomorphic graphs get
the same certificate, others a different one) that stays fast on 100,000-node blocks.
Naive Weisfeiler-Lehman rounds need one round per node on a chain, which made hashing
quadratic. Here, as in nauty, bliss and Traces:

1. **Refinement.** Nodes start in cells of equal label, cells ordered by label. A queue
   of splitter cells refines the ordered partition: a cell splits by how many edges of
   each (direction, edge label) its nodes have into the splitter, sub-cells in order of
   those counts. A cell that was already used as a splitter queues all its parts but the
   largest (Hopcroft), so refinement costs O(m log n). Cells keep their place in the
   ordering, so a cell's first position is an isomorphism-invariant colour.
2. **Individualisation.** Where refinement leaves a cell of several nodes (symmetric
   branches), each node of the first such cell is made a cell of its own in turn and
   refinement resumes; each discrete partition (a leaf) orders the nodes, and the
   smallest graph under those orders is the canonical form. Automorphisms prune the
   search (one child per orbit, and a jump back to where two paths part): those found
   when two leaves give the same graph, and swaps of twins (same label, same edges to
   the same nodes), so k identical branches cost O(k) leaves, not k!.

Nodes are `0..n-1`; `labels[i]` and edge labels are strings; only their order matters.
"""
from __future__ import annotations

import gc
from collections import deque
from typing import Dict, List, Optional, Sequence, Tuple

Edge = Tuple[int, int, str]
#: (sorted node labels, sorted edge labels, edges as sorted (source position, target position, edge label index))
Certificate = Tuple[Tuple[str, ...], Tuple[str, ...], List[Tuple[int, int, int]]]


class _Partition:
    """An ordered partition: `order` lists nodes cell by cell; a cell is named by its first position."""

    __slots__ = ("order", "pos", "cell", "size")

    def __init__(self, order: List[int], pos: List[int], cell: List[int], size: List[int]):
        self.order, self.pos, self.cell, self.size = order, pos, cell, size

    def copy(self) -> "_Partition":
        return _Partition(self.order[:], self.pos[:], self.cell[:], self.size[:])

    def first_open_cell(self) -> Optional[int]:
        start, n = 0, len(self.order)
        while start < n:
            if self.size[start] > 1:
                return start
            start += self.size[start]  # only a cell's first position holds its size
        return None

    def individualise(self, v: int) -> int:
        """Make `v` a cell of its own at the front of its cell; returns that cell."""
        x = self.cell[v]
        order, pos, cell = self.order, self.pos, self.cell
        w = order[x]
        order[pos[v]], order[x] = w, v
        pos[w], pos[v] = pos[v], x
        rest = self.size[x] - 1
        self.size[x], self.size[x + 1] = 1, rest
        for i in range(x + 1, x + 1 + rest):
            cell[order[i]] = x + 1
        return x


def _refine(p: _Partition, queue: Sequence[int], relations: List[List[Tuple[int, int]]]) -> None:
    """Refine `p` until equitable, starting from the splitter cells in `queue`."""
    order, pos, cell, size = p.order, p.pos, p.cell, p.size
    pending = deque(queue)
    queued = set(queue)
    while pending:
        s = pending.popleft()
        queued.discard(s)
        # The kinds of each node's edges into the splitter, as a multiset (a list, sorted later).
        kinds: Dict[int, List[int]] = {}
        for i in range(s, s + size[s]):
            for code, v in relations[order[i]]:
                found = kinds.get(v)
                if found is None:
                    kinds[v] = [code]
                else:
                    found.append(code)
        touched_by_cell: Dict[int, List[int]] = {}
        for v in kinds:
            x = cell[v]
            if size[x] > 1:
                touched_by_cell.setdefault(x, []).append(v)
        for x in sorted(touched_by_cell):
            length = size[x]
            touched = touched_by_cell[x]
            groups: Dict[tuple, List[int]] = {}
            for v in touched:
                found = kinds[v]
                groups.setdefault(tuple(sorted(found)) if len(found) > 1 else (found[0],), []).append(v)
            untouched = length - len(touched)
            if untouched == 0 and len(groups) == 1:
                continue
            # Untouched nodes (no edge into the splitter) first, then the groups by signature.
            back = x + length
            for v in touched:
                back -= 1
                w = order[back]
                i = pos[v]
                order[i], order[back] = w, v
                pos[w], pos[v] = i, back
            parts: List[Tuple[int, int]] = [(x, untouched)] if untouched else []
            i = x + untouched
            for key in sorted(groups):
                members = groups[key]
                start = i
                parts.append((start, len(members)))
                for v in members:
                    order[i], pos[v], cell[v] = v, i, start
                    i += 1
            for start, n in parts:
                size[start] = n
            if x in queued:
                new = [start for start, _ in parts if start != x]
            else:
                largest = max(parts, key=lambda part: part[1])
                new = [start for start, _ in parts if start != largest[0]]
            for start in new:
                pending.append(start)
                queued.add(start)


class _Search:
    def __init__(self, labels: Sequence[str], edges: List[Tuple[int, int, int]],
                 relations: List[List[Tuple[int, int]]]):
        self.n, self.edges, self.relations = len(labels), edges, relations
        self.first: Optional[Tuple[List[Tuple[int, int, int]], List[int], List[int]]] = None
        self.best: Optional[Tuple[List[Tuple[int, int, int]], List[int], List[int]]] = None
        self.generators: List[List[int]] = []
        self.twins = _twin_classes(labels, relations)
        self.twin_of = [-1] * self.n
        for k, members in enumerate(self.twins):
            for u in members:
                self.twin_of[u] = k

    def _all_twins(self, p: _Partition, x: int) -> bool:
        first = self.twin_of[p.order[x]]
        return first >= 0 and all(self.twin_of[p.order[i]] == first for i in range(x + 1, x + p.size[x]))

    def leaf(self, p: _Partition, path: List[int]) -> Optional[int]:
        """Record a leaf; on an automorphism, the depth to jump back to."""
        pos = p.pos
        graph = sorted((pos[s], pos[t], lab) for s, t, lab in self.edges)
        here = (graph, p.order[:], path[:])
        if self.first is None:
            self.first = self.best = here
            return None
        for other in (self.first, self.best):
            if graph == other[0]:
                automorphism = [0] * self.n
                for a, b in zip(other[1], here[1]):
                    automorphism[a] = b
                self.generators.append(automorphism)
                common = 0
                while common < len(path) and common < len(other[2]) and path[common] == other[2][common]:
                    common += 1
                return common
        if graph < self.best[0]:
            self.best = here
        return None

    def explore(self, p: _Partition, path: List[int]) -> Optional[int]:
        """Search below `p` (refined); returns a depth to jump back to, or None."""
        x = p.first_open_cell()
        while x is not None and self._all_twins(p, x):
            # Every order of mutual twins gives the same graph: make them all singletons, no branching.
            cells = range(x, x + p.size[x])
            for i in cells:
                p.cell[p.order[i]], p.size[i] = i, 1
            _refine(p, cells, self.relations)
            x = p.first_open_cell()
        if x is None:
            return self.leaf(p, path)
        depth = len(path)
        # Orbits of the automorphisms known so far that fix the path: one child per orbit suffices.
        # Computed only once a second child is considered (most nodes have one child explored).
        parent: List[int] = []

        def find(v: int) -> int:
            while parent[v] != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        def union(a: int, b: int) -> None:
            a, b = find(a), find(b)
            if a != b:
                parent[max(a, b)] = min(a, b)

        applied = 0
        done: List[int] = []
        for v in sorted(p.order[x:x + p.size[x]]):
            if done:
                if not parent:
                    parent.extend(range(self.n))
                    fixed = set(path)
                    for members in self.twins:  # swapping two twins off the path fixes the path
                        free = [u for u in members if u not in fixed]
                        for a, b in zip(free, free[1:]):
                            union(a, b)
                while applied < len(self.generators):
                    g = self.generators[applied]
                    applied += 1
                    if all(g[u] == u for u in path):
                        for u in range(self.n):
                            union(u, g[u])
                root = find(v)
                if any(find(u) == root for u in done):
                    continue  # an automorphism fixing the path maps v to a node already explored
            child = p.copy()
            _refine(child, [child.individualise(v)], self.relations)
            jump = self.explore(child, path + [v])
            done.append(v)
            if jump is not None and jump < depth:
                return jump
        return None


def _twin_classes(labels: Sequence[str], relations: List[List[Tuple[int, int]]]) -> List[List[int]]:
    """Groups of nodes with the same label and the same edges to the same other nodes.

    Swapping two such twins (a dead-end branch repeated, leaves of a star) is an automorphism
    known without search; with them as generators, n twins cost one path of the search, not n.
    Twins joined by an edge are left out (their edges differ: each has the other as neighbour).
    """
    groups: Dict[tuple, List[int]] = {}
    for u, rel in enumerate(relations):
        key = (labels[u], tuple(sorted((code, -1 if v == u else v) for code, v in rel)))
        groups.setdefault(key, []).append(u)
    return [members for members in groups.values() if len(members) > 1]


def canonical_order(labels: Sequence[str], edges: Sequence[Edge]) -> Tuple[Certificate, List[int]]:
    """The canonical form of a labelled directed multigraph, and the node at each canonical position.

    Two graphs have equal certificates exactly when an isomorphism maps nodes to nodes of
    the same label and edges to edges of the same label; mapping the i-th node of one
    order to the i-th of the other is then such an isomorphism.
    """
    # Refinement allocates many small acyclic containers: pausing the cyclic collector,
    # which would rescan the caller's (large) heap again and again, saves about a third.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _canonical_order(labels, edges)
    finally:
        if paused:
            gc.enable()


def _canonical_order(labels: Sequence[str], edges: Sequence[Edge]) -> Tuple[Certificate, List[int]]:
    n = len(labels)
    edge_labels = tuple(sorted({lab for _, _, lab in edges}))
    code_of = {lab: k for k, lab in enumerate(edge_labels)}
    coded = [(s, t, code_of[lab]) for s, t, lab in edges]
    # relations[u]: (kind, v) for each edge at u; a splitter cell holding u counts `kind` for v.
    relations: List[List[Tuple[int, int]]] = [[] for _ in range(n)]
    for s, t, code in coded:
        relations[t].append((2 * code, s))  # s has an outgoing edge of this label into t's cell
        relations[s].append((2 * code + 1, t))  # t has an incoming edge of this label from s's cell
    order = sorted(range(n), key=labels.__getitem__)
    pos = [0] * n
    cell = [0] * n
    size = [0] * n
    starts = []
    for i, v in enumerate(order):
        pos[v] = i
        if i == 0 or labels[order[i - 1]] != labels[v]:
            starts.append(i)
        cell[v] = starts[-1]
        size[starts[-1]] += 1
    partition = _Partition(order, pos, cell, size)
    _refine(partition, starts, relations)
    search = _Search(labels, coded, relations)
    search.explore(partition, [])
    graph, best_order, _ = search.best
    return (tuple(labels[v] for v in best_order), edge_labels, graph), best_order
