"""Machine checks of the NAD benchmark: predicates on the structural diff of a modified block.

A request's `checks` is a list of tables, each with a `kind` from `CHECKS` below; a reply
succeeds when its block verifies, differs from the base block, and every check holds. Checks
look at `nadc diff`'s alignment (`block_diff`): which nodes were added, removed or changed, and
which edges were added, so renumbering or reordering a block never matters.

Operation patterns are canonical operation names, with `|` for alternatives
(`"Conv2d|Linear"`); parameter values are compared in canonical form (`C//4` and `C/4` differ,
`3` and `(3,3)` for a spatial size do not).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Hashable, Optional

from nader.compiler.passes.canonical import canonical_params
from nader.compiler.passes.diff import BlockDiff
from nader.dsl.ir import Block, Node
from nader.dsl.parser import parse


@dataclass(frozen=True)
class Outcome:
    ok: bool
    reason: str = ""


def _matches(node: Optional[Node], pattern: str) -> bool:
    if node is None:
        return False
    name = node.opdef.name if node.opdef is not None else node.op_name
    return name in pattern.split("|")


def _count(nodes, pattern: str) -> int:
    return sum(_matches(n, pattern) for n in nodes)


def _counts_at_least(nodes, wanted: dict, what: str) -> Outcome:
    nodes = list(nodes)
    for pattern, n in wanted.items():
        have = _count(nodes, pattern)
        if have < n:
            return Outcome(False, f"{what} {have} node(s) of {pattern}, expected at least {n}")
    return Outcome(True)


def check_added(spec: dict, diff: BlockDiff, new: Block) -> Outcome:
    """`{kind="added", ops={Sigmoid=1, Mul=1}}`: at least these many nodes of each op were added."""
    return _counts_at_least(diff.added, spec["ops"], "added")


def check_removed(spec: dict, diff: BlockDiff, new: Block) -> Outcome:
    """`{kind="removed", ops={BN=1}}`: at least these many nodes of each op were removed."""
    return _counts_at_least(diff.removed, spec["ops"], "removed")


def check_count(spec: dict, diff: BlockDiff, new: Block) -> Outcome:
    """`{kind="count", op="Conv2d", min=, max=, delta_min=, delta_max=}`: the number of nodes of an
    op in the new block, absolutely or relative to the base block."""
    pattern = spec["op"]
    after, before = _count(new.nodes, pattern), _count(diff.a.nodes, pattern)
    bounds = (("min", after, lambda v, b: v >= b), ("max", after, lambda v, b: v <= b),
              ("delta_min", after - before, lambda v, b: v >= b), ("delta_max", after - before, lambda v, b: v <= b))
    for key, value, holds in bounds:
        if key in spec and not holds(value, spec[key]):
            return Outcome(False, f"{pattern}: {key} {spec[key]} not met ({before} -> {after} nodes)")
    return Outcome(True)


def check_param(spec: dict, diff: BlockDiff, new: Block) -> Outcome:
    """`{kind="param", op="Conv2d", param="kernel_size", value="5", min=1, changed=true}`: nodes of an
    op whose parameter has a value; with `changed`, only nodes whose parameter differs from the base
    (or that were added); `max=N` instead bounds their number from above."""
    if spec.get("changed"):
        nodes = [c.b for c in diff.changed if spec["param"] in c.params]
        nodes += list(diff.added)
    else:
        nodes = list(new.nodes)
    value = canonical_param_value(spec["op"].split("|")[0], spec["param"], spec["value"])
    hits = [n for n in nodes if _matches(n, spec["op"]) and canonical_params(n).get(spec["param"]) == value]
    what = f"{len(hits)} {spec['op']} node(s) with {spec['param']}={spec['value']}" + \
        (" (changed)" if spec.get("changed") else "")
    if "max" in spec:  # `max=0`: no such node may remain
        return Outcome(True) if len(hits) <= spec["max"] else Outcome(False, f"{what}, expected at most {spec['max']}")
    need = spec.get("min", 1)
    if len(hits) < need:
        return Outcome(False, f"{what}, expected at least {need}")
    return Outcome(True)


@functools.lru_cache(maxsize=None)
def canonical_param_value(op: str, param: str, value) -> str:
    """A check's value in the canonical form `canonical_params` gives (`C//2`, `(1, 3)`, ...)."""
    block = parse(f"##V##\n0:input\n1:output\n2:{op}({param}={value})\n0->2\n2->1\n").program.blocks[0]
    node = next(n for n in block.nodes if n.opdef is not None and n.opdef.name == op)
    return canonical_params(node)[param]


def _successors(block: Block) -> dict[Hashable, list[Hashable]]:
    out: dict[Hashable, list[Hashable]] = {}
    for s, t, _, _ in block.wires():
        out.setdefault(s, []).append(t)
    return out


def check_path(spec: dict, diff: BlockDiff, new: Block) -> Outcome:
    """`{kind="path", ops=["AdaptiveAvgPool2d|mean", "Conv2d|Linear", "Sigmoid"], added=true}`: a chain
    of edges through nodes matching the patterns in order (all added nodes with `added`)."""
    nodes = new.node_map()
    added = {n.id for n in diff.added}
    succ = _successors(new)
    patterns = spec["ops"]

    def ok(ident, pattern):
        return _matches(nodes.get(ident), pattern) and (not spec.get("added") or ident in added)

    def walk(ident, k):
        if k == len(patterns) - 1:
            return True
        return any(ok(t, patterns[k + 1]) and walk(t, k + 1) for t in succ.get(ident, ()))

    if any(ok(i, patterns[0]) and walk(i, 0) for i in nodes):
        return Outcome(True)
    return Outcome(False, f"no {'new ' if spec.get('added') else ''}path {' -> '.join(patterns)}")


def check_edge(spec: dict, diff: BlockDiff, new: Block) -> Outcome:
    """`{kind="edge", from="input", to="Add"}`: an added edge from a node of one op to a node of another."""
    nodes = new.node_map()
    for s, t, _ in diff.edges_added:
        if _matches(nodes.get(s), spec["from"]) and _matches(nodes.get(t), spec["to"]):
            return Outcome(True)
    return Outcome(False, f"no new edge {spec['from']} -> {spec['to']}")


def check_replaced(spec: dict, diff: BlockDiff, new: Block) -> Outcome:
    """`{kind="replaced", from="ReLU", to="GELU", min=1, none_left=true}`: nodes of one op became
    another (a changed node, or one removed and one added); with `none_left`, no `from` remains."""
    swapped = sum(1 for c in diff.changed if c.op and c.op[0] in spec["from"].split("|") and _matches(c.b, spec["to"]))
    swapped += min(_count(diff.removed, spec["from"]), _count(diff.added, spec["to"]))
    need = spec.get("min", 1)
    if swapped < need:
        return Outcome(False, f"{swapped} {spec['from']} node(s) became {spec['to']}, expected at least {need}")
    if spec.get("none_left") and _count(new.nodes, spec["from"]):
        return Outcome(False, f"{_count(new.nodes, spec['from'])} {spec['from']} node(s) remain")
    return Outcome(True)


CHECKS: dict[str, Callable[[dict, BlockDiff, Block], Outcome]] = {
    "added": check_added,
    "removed": check_removed,
    "count": check_count,
    "param": check_param,
    "path": check_path,
    "edge": check_edge,
    "replaced": check_replaced,
}


def judge(checks: list[dict], diff: BlockDiff) -> Outcome:
    """All checks of a request against a diff from the base block to the reply's block."""
    if diff.equal:
        return Outcome(False, "the block is unchanged")
    for spec in checks:
        kind = spec.get("kind")
        if kind not in CHECKS:
            raise ValueError(f"unknown check kind {kind!r}; known: {', '.join(CHECKS)}")
        outcome = CHECKS[kind](spec, diff, diff.b)
        if not outcome.ok:
            return outcome
    return Outcome(True)
