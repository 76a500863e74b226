"""Move an extra input of a one-input operation to a merge that lacks one (NAD207)."""
from __future__ import annotations

from nader.dsl.diagnostics import UNSAFE

from ..kind import FixKind
from ._common import overfed_node, underfed_merge

KIND = FixKind("move-input", UNSAFE, ("NAD207",),
               "Send an extra input of a one-input operation to the merge downstream that lacks it; feed a merge the branches nothing reads.", """
    LLMs often wire a residual connection one node too early: `0->26` into a `BN` while the
    `Add` after it has one input. The wire moves to the nearest downstream merge (`Add`, `Mul`,
    `concat`) of the node; no node is added. A merge left with one input while branches hang
    unread (a `concat` whose other branches were never wired) gets those branches.
""", order=5)


def candidates(ctx, diagnostic):
    node = overfed_node(ctx, diagnostic)
    if node is not None:
        merges = [d for d in ctx.descendants(node.id) if underfed_merge_id(ctx, d)]
        merges += [d for d in ctx.descendants(node.id) if _is_merge(ctx, d) and d not in merges]
        for target in merges[:3]:
            edit = ctx.editor()
            for index, position in _skips_first(ctx, edit, node.id):
                source = edit.sources(index)[position]
                if source in ctx.descendants(target) or source == target:
                    continue
                edit2 = ctx.editor()
                edit2.retarget(index, position, target)
                yield edit2.fix(KIND.name, f"move the input {source}->{node.id} to the merge node {target} "
                                           f"(`{ctx.op(target)}`)", UNSAFE)
        return
    merge = underfed_merge(ctx, diagnostic)
    if merge is None:
        return
    yield from feed_candidates(ctx, merge)
    for upstream in ctx.ancestors(merge.id):
        up = ctx.node(upstream)
        if up is None or up.opdef is None or up.opdef.arity.max != 1 or len(ctx.inputs(upstream)) < 2:
            continue
        edit = ctx.editor()
        for index, position in edit.wires_into(upstream)[1:]:
            source = edit.sources(index)[position]
            edit2 = ctx.editor()
            edit2.retarget(index, position, merge.id)
            yield edit2.fix(KIND.name, f"move the input {source}->{upstream} to the merge node {merge.id} "
                                       f"(`{merge.op_name}`)", UNSAFE)


def underfed_merge_id(ctx, node_id) -> bool:
    node = ctx.node(node_id)
    return node is not None and node.opdef is not None and node.opdef.arity.min >= 2 and \
        len(ctx.inputs(node_id)) < node.opdef.arity.min


def _is_merge(ctx, node_id) -> bool:
    node = ctx.node(node_id)
    return node is not None and node.opdef is not None and node.opdef.arity.min >= 2 and node.opdef.arity.max is None


def _skips_first(ctx, edit, node_id):
    """The wires into `node_id`, those from an ancestor of another input (a skip connection) first,
    later wires before earlier ones."""
    wires = edit.wires_into(node_id)
    sources = [edit.sources(k)[j] for k, j in wires]

    def skip(wire_source) -> bool:
        return any(wire_source in ctx.ancestors(other) for other in sources if other != wire_source)

    return sorted(reversed(wires), key=lambda w: not skip(edit.sources(w[0])[w[1]]))


def feed_candidates(ctx, merge):
    """Wire the nodes nothing reads (branches left hanging) into a merge that has one input."""
    below = set(ctx.descendants(merge.id))
    unread = [n.id for n in ctx.block.nodes if n.opdef is not None and n.op_name not in ("output", "input", "input1",
              "input2") and not ctx.consumers(n.id) and n.id != merge.id and n.id not in below]
    if not unread:
        return
    edit = ctx.editor()
    for source in unread:
        edit.add_wire(source, merge.id)
    yield edit.fix(KIND.name, f"feed the merge node {merge.id} (`{merge.op_name}`) the branch"
                              f"{'es' if len(unread) > 1 else ''} nothing reads: node{'s' if len(unread) > 1 else ''} "
                              f"{', '.join(map(str, unread))}", UNSAFE)
